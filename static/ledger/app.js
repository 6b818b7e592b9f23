// Small behaviours that must not live inline (the Content-Security-Policy forbids that).
// Forms marked data-confirm ask before they submit.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
}, true);
