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
    var rows = Array.prototype.filter.call(body.rows, function (r) { return !r.classList.contains("below"); });
    var below = new Map();
    rows.forEach(function (row) {
      var next = row.nextElementSibling;
      var after = [];
      while (next && next.classList.contains("below")) { after.push(next); next = next.nextElementSibling; }
      below.set(row, after);
    });
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
    rows.forEach(function (row) {
      body.appendChild(row);
      below.get(row).forEach(function (b) { body.appendChild(b); });
    });
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
      var rows = Array.prototype.filter.call(table.tBodies[0].rows, function (r) { return !r.classList.contains("below"); });
      var shown = 0;
      each(rows, function (row) {
        var text = row.textContent.toLowerCase();
        var hit = words.every(function (w) { return text.indexOf(w) !== -1; });
        row.hidden = !hit;
        for (var next = row.nextElementSibling; next && next.classList.contains("below"); next = next.nextElementSibling) {
          next.hidden = !hit;
        }
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
    pin(table);
    if (table.tHead.rows[0].cells.length > 10) { addChooser(table); }
  });

  // Key columns stay in view when a wide table scrolls sideways: each pinned column sticks at
  // the summed width of the pinned columns before it.
  function pin(table) {
    var left = 0;
    each(table.tHead.rows[0].cells, function (th, index) {
      if (!th.classList.contains("pin")) { return; }
      var offset = left + "px";
      th.style.left = offset;
      each(table.tBodies[0].rows, function (row) {
        var cell = row.cells[index];
        if (cell && !row.classList.contains("below")) { cell.style.left = offset; }
      });
      left += th.getBoundingClientRect().width;
    });
  }

  // Wide tables: choose the columns to show (pinned ones always stay).
  function addChooser(table) {
    var box = document.createElement("details");
    box.className = "chooser";
    var summary = document.createElement("summary");
    summary.textContent = "Columns";
    box.appendChild(summary);
    each(table.tHead.rows[0].cells, function (th, index) {
      if (th.classList.contains("pin")) { return; }
      var label = document.createElement("label");
      var box2 = document.createElement("input");
      box2.type = "checkbox";
      box2.checked = true;
      box2.setAttribute("data-column", String(index));
      box2.addEventListener("change", function () {
        var hide = !box2.checked;
        th.hidden = hide;
        each(table.tBodies[0].rows, function (row) {
          if (!row.classList.contains("below") && row.cells[index]) { row.cells[index].hidden = hide; }
        });
      });
      label.appendChild(box2);
      label.appendChild(document.createTextNode(" " + th.textContent));
      box.appendChild(label);
    });
    var wrap = table.parentNode;
    wrap.parentNode.insertBefore(box, wrap);
  }
})();
