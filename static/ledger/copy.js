// The copy button beside a new API key (no inline script: the Content-Security-Policy
// forbids it). Without JavaScript the button stays hidden and the key is selected by hand.
document.querySelectorAll("[data-copy]").forEach((button) => { button.hidden = false; });

document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  const said = document.getElementById(button.dataset.copyStatus);
  if (!(field instanceof HTMLInputElement)) return;
  field.select();
  let copied = false;
  try {
    // Only on https or localhost; elsewhere the clipboard API is missing and this throws.
    await navigator.clipboard.writeText(field.value);
    copied = true;
  } catch {
    copied = document.execCommand("copy");
  }
  if (said) {
    said.textContent = copied
      ? "Copied. Paste it where the agent keeps its secrets."
      : "The browser did not let the page copy it: the key is selected, press Ctrl+C (⌘C on a Mac).";
  }
});
