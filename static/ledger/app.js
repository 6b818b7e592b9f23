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

// Tables on phones (app.css, below about 600px) stack as cards: each cell is labelled by its
// column's header, copied here into data-label, on load and into whatever htmx swaps in.
function labelCells(root) {
  const tables = new Set(root.querySelectorAll ? root.querySelectorAll("table") : []);
  const around = root.closest ? root.closest("table") : null;
  if (around) tables.add(around);
  for (const table of tables) {
    const headers = [];
    const headRow = table.tHead ? table.tHead.rows[0] : null;
    for (const th of headRow ? headRow.cells : []) {
      const text = th.cloneNode(true);
      text.querySelectorAll("[aria-hidden='true']").forEach((hidden) => hidden.remove());
      for (let i = 0; i < th.colSpan; i += 1) headers.push(text.textContent.replace(/\s+/g, " ").trim());
    }
    if (!headers.length) continue;
    for (const body of table.tBodies) {
      for (const row of body.rows) {
        let column = 0;
        for (const cell of row.cells) {
          if (!cell.hasAttribute("data-label")) cell.dataset.label = headers[column] || "";
          column += cell.colSpan;
        }
      }
    }
  }
}
document.addEventListener("DOMContentLoaded", () => labelCells(document));
document.addEventListener("htmx:load", (event) => labelCells(event.detail.elt));

// h4 (navigation): the header's "Admin" menu (a <details>) closes when it is done with, as
// a menu does: Escape closes it and puts focus back on "Admin"; a click elsewhere, or Tab
// past its last link, closes it. Without this script it still opens and closes by hand.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  const menu = document.activeElement && document.activeElement.closest(".nav-menu details[open]");
  if (menu) {
    menu.open = false;
    menu.querySelector("summary").focus();
  }
});
document.addEventListener("click", (event) => {
  for (const menu of document.querySelectorAll(".nav-menu details[open]")) {
    if (!menu.contains(event.target)) menu.open = false;
  }
});
document.addEventListener("focusout", (event) => {
  const menu = event.target instanceof Element && event.target.closest(".nav-menu details[open]");
  if (menu && event.relatedTarget instanceof Node && !menu.contains(event.relatedTarget)) menu.open = false;
});

// f2 (search history): Back brings back htmx's snapshot of the page, in which a search form
// holds the values it was first drawn with, not what was typed since. Every GET form that
// htmx sends to this very address is set from the address it came back to, so the box and
// the filters always say what the results below them are for.
document.addEventListener("htmx:historyRestore", () => {
  const asked = new URLSearchParams(location.search);
  for (const form of document.querySelectorAll("form[hx-get]")) {
    if ((form.getAttribute("method") || "get").toLowerCase() !== "get") continue;
    if (new URL(form.action, location.href).pathname !== location.pathname) continue;
    for (const field of form.elements) {
      if (!field.name || field.type === "submit" || field.type === "button") continue;
      if (field.type === "checkbox" || field.type === "radio") {
        field.checked = asked.getAll(field.name).includes(field.value);
      } else {
        field.value = asked.get(field.name) || "";
      }
    }
    const filters = form.querySelector("details");
    if (filters) {
      filters.open = [...filters.querySelectorAll("[name]")].some((field) => asked.get(field.name));
    }
  }
});
