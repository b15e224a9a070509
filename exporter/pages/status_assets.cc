// The status page's script and style, served from /static/.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <numeric>

#include "exporter/pages/status_page.h"
#include "exporter/pages/timeline.h"
#include "schedwatch/duration.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {

const std::string& StatusScript() {
  static const std::string kScript =
      R"JS(// schedwatch status page: keeps the page fresh without reloading it (fetches this same page and
// swaps the part that changes, so nothing flickers and the search box keeps its focus) and
// filters the roles as you type. The page works without it.
"use strict";
(function () {
  var seconds = Number(document.body.dataset.refreshSeconds) || 15;
  var search = document.getElementById("q");
  var refreshes = 0;

  function filterRows() {
    if (!search) return;
    var text = search.value.trim().toLowerCase();
    document.querySelectorAll("#roles tbody tr[data-role]").forEach(function (row) {
      row.hidden = text !== "" && row.dataset.role.toLowerCase().indexOf(text) < 0;
    });
  }

  function refresh() {
    fetch(window.location.href, {cache: "no-store", credentials: "same-origin"})
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        ["state", "live"].forEach(function (id) {
          var now = document.getElementById(id), next = fresh.getElementById(id);
          if (now && next) now.replaceWith(document.adoptNode(next));
        });
        filterRows();
        document.documentElement.dataset.refreshes = String(++refreshes);
      })
      .catch(function () { /* the exporter is restarting: try again next time */ });
  }

  if (search) {
    search.addEventListener("input", function () {
      filterRows();
      var url = new URL(window.location.href);
      if (search.value) url.searchParams.set("q", search.value); else url.searchParams.delete("q");
      window.history.replaceState(null, "", url);
    });
  }
  filterRows();
  window.setInterval(refresh, seconds * 1000);
})();
)JS";
  return kScript;
}

const std::string& StatusStyle() {
  static const std::string kStyle = R"CSS([hidden]{display:none!important}
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1d2430}
table{border-collapse:collapse;margin-bottom:1.5rem;min-width:60%}
th,td{border-bottom:1px solid #d8dde6;padding:.35rem .7rem;text-align:left;vertical-align:top}
th{background:#f3f5f9}
.c{display:inline-block;border-radius:.6rem;padding:0 .5rem;margin:0 .15rem .15rem 0;font-size:.85rem;color:#1d2430;text-decoration:none}
.ok{background:#d9f2dd}.bad{background:#fbd9d6}.warn{background:#fdf0c9}.unknown{background:#e2e4ea}
code{font-size:.85rem}
#counts{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3rem}
#filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:center;margin:.5rem 0 1rem}
#filters input,#filters select,#filters button{font:inherit;padding:.2rem .4rem}
.why{max-width:28rem;font-size:.9rem}
.spark{display:block;width:200px;height:20px}
.scroll{overflow-x:auto}
.timeline{display:block;max-width:1100px;border:1px solid #d8dde6;background:#fff}
.legend{font-size:.9rem}
.k{display:inline-block;min-width:1rem;text-align:center}
.k.grace{background:#f4e3a1}.k.maxrt{border:1px dashed #9aa3b2}
.k.succeeded,.o.succeeded{color:#2e9e4f}.k.failed,.o.failed{color:#d23f31}
.k.running,.o.running{color:#2f6fd6}.k.hung,.o.hung{color:#e08a00}
.o{font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
dt{color:#5b6472}dd{margin:0}
.reasons li{margin-bottom:.6rem}
td.drift mark,dd mark,td mark{background:#fdf0c9}
nav a{margin-right:.2rem}
@media (max-width:700px){
body{margin:.6rem}
table{min-width:0;width:100%}
#roles thead,#sources thead{display:none}
#roles tr,#sources tr{display:block;border:1px solid #d8dde6;border-radius:.4rem;margin-bottom:.6rem;padding:.3rem}
#roles td,#sources td{display:flex;gap:.5rem;border:0;padding:.15rem .3rem}
#roles td::before,#sources td::before{content:attr(data-label);color:#5b6472;min-width:6.5rem;flex:none}
.spark{width:100%;max-width:200px}
.why{max-width:none}
}
)CSS";
  return kStyle;
}

}  // namespace schedwatch
