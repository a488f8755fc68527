(function () {
  "use strict";
  var root = document.documentElement;
  root.classList.remove("nojs");
  root.classList.add("js");

  function each(list, fn) {
    Array.prototype.forEach.call(list, fn);
  }

  function sortKey(cell) {
    var value = cell.getAttribute("data-sort");
    return value === null ? null : parseFloat(value);
  }

  function sortBy(table, index, th) {
    var body = table.tBodies[0];
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var numeric = th.classList.contains("num");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var ca = a.cells[index];
      var cb = b.cells[index];
      if (!ca || !cb) { return 0; }
      if (numeric) {
        var x = sortKey(ca);
        var y = sortKey(cb);
        if (x === null || y === null) { return (x === null) - (y === null); }
        return (x - y) * dir;
      }
      return ca.textContent.trim().localeCompare(cb.textContent.trim()) * dir;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    each(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
  }

  function addFilter(table) {
    var bar = document.createElement("div");
    bar.className = "table-tools";
    var input = document.createElement("input");
    input.type = "search";
    input.className = "filter";
    input.placeholder = "Filter rows (all words must match)";
    input.setAttribute("aria-label", "Filter rows of " + (table.getAttribute("data-name") || "this table"));
    var count = document.createElement("span");
    count.className = "filter-count";
    count.setAttribute("aria-live", "polite");
    bar.appendChild(input);
    bar.appendChild(count);
    table.parentNode.parentNode.insertBefore(bar, table.parentNode);
    input.addEventListener("input", function () {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var rows = table.tBodies[0].rows;
      var shown = 0;
      each(rows, function (row) {
        var text = row.textContent.toLowerCase();
        var hit = words.every(function (w) { return text.indexOf(w) !== -1; });
        row.hidden = !hit;
        if (hit) { shown += 1; }
      });
      count.textContent = words.length ? shown + " of " + rows.length + " rows" : "";
    });
  }

  each(document.querySelectorAll("table.data"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    each(table.tHead.rows[0].cells, function (th, index) {
      th.tabIndex = 0;
      th.classList.add("sortable");
      th.addEventListener("click", function () { sortBy(table, index, th); });
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, index, th);
        }
      });
    });
    if (table.tBodies[0].rows.length > 3) { addFilter(table); }
  });
})();
