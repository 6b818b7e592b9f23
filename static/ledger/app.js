// Small behaviours that must not live inline (the Content-Security-Policy forbids that).
// Forms marked data-confirm ask before they submit.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
}, true);

// htmx: a refusal (400, 409, 422, 423 …) comes back as the fragment with the reason in it,
// so swap it in like a success. Anything else that fails (404, 500, no network) is said in
// the page's alert line instead of failing silently.
const SWAP_ERRORS = new Set([400, 403, 409, 410, 412, 422, 423]);
document.addEventListener("htmx:beforeSwap", (event) => {
  const status = event.detail.xhr.status;
  if (SWAP_ERRORS.has(status)) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

function sayRequestFailed(text) {
  const line = document.getElementById("request-error");
  if (line) {
    line.textContent = text;
    line.hidden = false;
  }
}

document.addEventListener("htmx:responseError", (event) => {
  const status = event.detail.xhr.status;
  if (SWAP_ERRORS.has(status)) return;
  sayRequestFailed(status === 404
    ? "That is no longer there (it may have been changed elsewhere). Reload the page to see the current state."
    : `Something went wrong on our side (error ${status}). Nothing was changed; please try again.`);
});
document.addEventListener("htmx:sendError", () => {
  sayRequestFailed("The server could not be reached. Check your connection and try again.");
});
document.addEventListener("htmx:beforeRequest", () => {
  const line = document.getElementById("request-error");
  if (line) line.hidden = true;
});
