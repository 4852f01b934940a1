// prompteval view: the grid's keys. Arrows or h j k l move between cells, Enter opens the
// cell's item, / goes to the search field, n and p to the next and previous page.
"use strict";
(function () {
  const table = document.getElementById("grid");
  if (!table) return;
  const rows = Array.from(table.querySelectorAll("tbody tr"))
    .map((tr) => Array.from(tr.querySelectorAll("td.cell")))
    .filter((cells) => cells.length);
  let row = 0, col = 0;
  function show() {
    table.querySelectorAll("td.focus").forEach((td) => td.classList.remove("focus"));
    const td = rows[row] && rows[row][col];
    if (!td) return;
    td.classList.add("focus");
    const link = td.querySelector("a");
    if (link) link.focus({preventScroll: true});
    td.scrollIntoView({block: "nearest"});
  }
  function move(dr, dc) {
    if (!rows.length) return;
    row = Math.max(0, Math.min(rows.length - 1, row + dr));
    col = Math.max(0, Math.min(rows[row].length - 1, col + dc));
    show();
  }
  const keys = {ArrowDown: [1, 0], j: [1, 0], ArrowUp: [-1, 0], k: [-1, 0],
                ArrowRight: [0, 1], l: [0, 1], ArrowLeft: [0, -1], h: [0, -1]};
  document.addEventListener("keydown", (event) => {
    const t = event.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLSelectElement) {
      if (event.key === "Escape") t.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (keys[event.key]) {
      event.preventDefault();
      move(keys[event.key][0], keys[event.key][1]);
    } else if (event.key === "Enter") {
      const link = rows[row] && rows[row][col] && rows[row][col].querySelector("a");
      if (link) { event.preventDefault(); window.location.assign(link.href); }
    } else if (event.key === "/") {
      const search = document.getElementById("grid-search");
      if (search) { event.preventDefault(); search.focus(); }
    } else if (event.key === "n" || event.key === "p") {
      const link = document.getElementById(event.key === "n" ? "next-page" : "previous-page");
      if (link) window.location.assign(link.href);
    }
  });
  table.addEventListener("click", (event) => {  // a click moves the keyboard's place too
    const td = event.target instanceof Element ? event.target.closest("td.cell") : null;
    rows.forEach((cells, r) => { const c = cells.indexOf(td); if (c >= 0) { row = r; col = c; } });
  });
  if (rows.length) show();
})();
