// prompteval view: rating a case (the page's token goes with every write), keyboard keys.
"use strict";
(function () {
  const form = document.getElementById("review");
  if (!form) return;
  const token = document.querySelector('meta[name="prompteval-token"]').content;
  const status = document.getElementById("review-status");
  const dims = Array.from(form.querySelectorAll("fieldset[data-dimension]"));
  let current = 0;
  function focusDim(i) {
    current = Math.max(0, Math.min(dims.length - 1, i));
    dims.forEach((d, j) => d.classList.toggle("active", j === current));
  }
  // a rating (key or click) moves the highlight to the next dimension, from the last
  // back to the first: rating again goes round the dimensions, not into the last one
  function rated(i) { focusDim((i + 1) % dims.length); }
  focusDim(0);
  dims.forEach((d, i) => d.addEventListener("change", () => rated(i)));
  const who = form.querySelector("input[name=reviewer]");
  async function save(event) {
    if (event) event.preventDefault();
    const ratings = {};
    for (const d of dims) {
      const picked = d.querySelector("input:checked");
      if (!picked) {
        status.textContent = "rate every dimension first (" + d.dataset.dimension + ")";
        status.className = "warn";
        return;
      }
      ratings[d.dataset.dimension] = Number(picked.value);
    }
    if (!who.value.trim()) {  // asked once: the browser keeps it
      status.textContent = "enter your name as reviewer first";
      status.className = "warn";
      who.focus();
      return;
    }
    const body = {
      file: form.dataset.file, case_id: form.dataset.case, sample: Number(form.dataset.sample),
      rubric: form.dataset.rubric, ratings: ratings,
      comment: form.querySelector("textarea[name=comment]").value,
      reviewer: who.value.trim(),
    };
    try { localStorage.setItem("prompteval-reviewer", body.reviewer); } catch (e) { /* private mode */ }
    const response = await fetch(form.action, {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-Prompteval-Token": token},
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    status.textContent = response.ok ? "saved: human score " + answer.human_score : answer.error;
    status.className = response.ok ? "saved" : "warn";
    if (response.ok) {  // a reload, and the next/previous links, show this reviewer's rating
      const url = new URL(window.location.href);
      url.searchParams.set("reviewer", body.reviewer);
      history.replaceState(null, "", url.toString());
    }
  }
  form.addEventListener("submit", save);
  if (!who.value) { try { who.value = localStorage.getItem("prompteval-reviewer") || ""; } catch (e) { /* */ } }
  // 1-5 rates the current dimension and moves on; j/k move; Enter saves; n/p next/previous
  // case; Escape leaves the name or notes field
  document.addEventListener("keydown", (event) => {
    const t = event.target;
    if (t instanceof HTMLTextAreaElement || (t instanceof HTMLInputElement && t.type === "text")) {
      if (event.key === "Escape") t.blur();  // back to the rating keys
      return;
    }
    if (event.key >= "1" && event.key <= "5") {
      const input = dims[current].querySelector('input[value="' + event.key + '"]');
      input.checked = true;
      rated(current);
    } else if (event.key === "j") { focusDim(current + 1); }
    else if (event.key === "k") { focusDim(current - 1); }
    else if (event.key === "Enter") { save(event); }
    else if (event.key === "n" || event.key === "p") {
      const link = document.getElementById(event.key === "n" ? "next-case" : "previous-case");
      if (link) window.location.assign(link.href);
    }
  });
})();
