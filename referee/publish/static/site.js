// The site's small behaviours: sortable tables, the hints of wide tables, the match list's
// filter, the rating chart's highlight. Bot names are data: this file never writes HTML, only
// classes, attributes it owns and textContent.
(function () {
  "use strict";

  // -- sortable tables: <table class="sortable">, a <button> in each <th>, data-v in cells.
  function cellValue(row, column, numeric) {
    const cell = row.children[column];
    const raw = cell ? (cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent) : "";
    if (!numeric) return raw.toLowerCase();
    const value = parseFloat(raw);
    return Number.isNaN(value) ? -Infinity : value;
  }

  function sortBy(table, th) {
    const headers = Array.from(th.parentElement.children);
    const column = headers.indexOf(th);
    const numeric = th.dataset.type === "num";
    const ascending = th.getAttribute("aria-sort") !== "ascending";
    headers.forEach((h) => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort((a, b) => {
      const x = cellValue(a, column, numeric);
      const y = cellValue(b, column, numeric);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return ascending ? order : -order;
    });
    const fragment = document.createDocumentFragment();
    rows.forEach((row) => fragment.appendChild(row));
    body.appendChild(fragment);
  }

  document.querySelectorAll("table.sortable").forEach((table) => {
    table.querySelectorAll("thead th").forEach((th) => {
      const button = th.querySelector("button");
      if (button) button.addEventListener("click", () => sortBy(table, th));
    });
  });

  // -- wide tables: a .scroll-frame (the wide() macro) whose table is wider than its frame
  // shows its hint and a fading edge on the side where columns are out of view; the classes
  // follow the frame's scrolling and the window's size.
  document.querySelectorAll(".scroll-frame").forEach((frame) => {
    const box = frame.querySelector(".scroll");
    const hint = frame.querySelector(".scroll-hint");
    if (!box) return;
    const update = () => {
      const room = box.scrollWidth - box.clientWidth;
      const over = room > 1;
      frame.classList.toggle("overflowing", over);
      frame.classList.toggle("more-left", over && box.scrollLeft > 1);
      frame.classList.toggle("more-right", over && box.scrollLeft < room - 1);
      if (hint) hint.hidden = !over;
    };
    box.addEventListener("scroll", update, { passive: true });
    window.addEventListener("resize", update);
    update();
  });

  // -- the match list's filter: rows carry their bots' slugs in data-bots.
  const filter = document.getElementById("bot-filter");
  const list = document.getElementById("match-list");
  if (filter && list) {
    const count = document.getElementById("match-count");
    const apply = () => {
      const wanted = filter.value;
      let shown = 0;
      for (const row of list.tBodies[0].rows) {
        const show = !wanted || row.dataset.bots.split(" ").includes(wanted);
        row.hidden = !show;
        shown += show ? 1 : 0;
      }
      if (count) count.textContent = wanted ? shown + " matches" : "";
    };
    const fromHash = () => {
      const match = /^#bot=(.+)$/.exec(location.hash);
      if (!match) return;
      const slug = decodeURIComponent(match[1]);
      if (Array.from(filter.options).some((o) => o.value === slug)) filter.value = slug;
    };
    fromHash();
    apply();
    filter.addEventListener("change", () => {
      apply();
      try {
        history.replaceState(null, "", filter.value ? "#bot=" + filter.value : "#");
      } catch (e) {
        /* some file:// setups refuse history changes: the filter works without them */
      }
    });
    window.addEventListener("hashchange", () => {
      fromHash();
      apply();
    });
  }

  // -- the rating chart: point at (or focus) a bot in the legend or a line to highlight it;
  // click to keep it highlighted.
  const chart = document.getElementById("history-chart");
  if (chart) {
    let pinned = null;
    const highlight = (index) => {
      chart.classList.toggle("focus", index !== null);
      chart.querySelectorAll("[data-series]").forEach((el) => {
        el.classList.toggle("on", el.dataset.series === index);
      });
    };
    const seriesOf = (event) => {
      const el = event.target.closest ? event.target.closest("[data-series]") : null;
      return el ? el.dataset.series : null;
    };
    chart.addEventListener("mouseover", (e) => highlight(seriesOf(e) ?? pinned));
    chart.addEventListener("mouseleave", () => highlight(pinned));
    chart.addEventListener("focusin", (e) => highlight(seriesOf(e) ?? pinned));
    chart.addEventListener("click", (e) => {
      const index = seriesOf(e);
      pinned = pinned === index ? null : index;
      highlight(pinned);
    });
    chart.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        const index = seriesOf(e);
        pinned = pinned === index ? null : index;
        highlight(pinned);
        e.preventDefault();
      }
    });
  }
})();
