"use strict";
// The page of a crawl: hash routes (#/summary, #/broken, #/page?url=...), each drawn from
// the JSON endpoints under /api/. Everything from the crawl (URLs, titles, anchors) is
// put in with textContent, never as HTML.
(function () {
  const token = new URLSearchParams(location.search).get("token");
  const search = token ? "?token=" + encodeURIComponent(token) : "";
  const view = document.getElementById("view");
  let timers = [];
  let live = false;

  function api(path) {
    const headers = token ? { Authorization: "Bearer " + token } : {};
    return fetch(path, { headers, cache: "no-store" }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body.error || r.statusText);
        return body;
      });
    });
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined) e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // A link to a URL's own page view, keeping the token.
  function pageLink(url) {
    if (!url) return "";
    return el("a", { href: search + "#/page?url=" + encodeURIComponent(url), "data-page": url }, url);
  }

  function figure(key, value, label) {
    return el("div", { class: "figure" },
      el("span", { class: "n", "data-figure": key }, value === null || value === undefined ? "-" : value),
      el("span", { class: "k" }, label || key));
  }

  function table(columns, rows, cell) {
    const head = el("tr", {}, ...columns.map(function (c) { return el("th", {}, c); }));
    const body = rows.map(function (r) {
      return el("tr", {}, ...columns.map(function (c) {
        const v = cell(r, c);
        return el("td", typeof v === "number" ? { class: "num" } : {}, v === null || v === undefined ? "-" : v);
      }));
    });
    if (!rows.length) body.push(el("tr", {}, el("td", { colspan: columns.length, class: "muted" }, "(none)")));
    return el("div", { class: "scroll" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
  }

  function statusCell(status, state) {
    const text = status || state || "-";
    return el("span", { class: status >= 400 || state === "failed" ? "bad" : "" }, text);
  }

  function params() {
    const hash = location.hash.replace(/^#\/?/, "");
    const i = hash.indexOf("?");
    return { route: (i < 0 ? hash : hash.slice(0, i)) || (live ? "live" : "summary"),
             args: new URLSearchParams(i < 0 ? "" : hash.slice(i + 1)) };
  }

  function go(route, args) {
    location.hash = "#/" + route + (args.toString() ? "?" + args : "");
  }

  // A table of rows with a filter box and pages. The next page continues from the last
  // row's place (`after`), which the server reads by primary key; the previous one goes
  // by offset.
  function paged(title, endpoint, columns, cell, filters) {
    const { route, args } = params();
    const q = args.get("q") || "";
    const offset = Number(args.get("offset") || 0);
    const limit = Number(args.get("limit") || 50);
    const box = el("input", { type: "search", placeholder: "filter by URL", value: q, "aria-label": "filter by URL" });
    const out = el("div", {}, el("p", { class: "muted" }, "loading..."));
    const tools = el("div", { class: "tools" }, box);
    const refilter = function (name, value) {
      const a = new URLSearchParams(args); a.delete("offset"); a.delete("after");
      if (value) a.set(name, value); else a.delete(name);
      go(route, a);
    };
    box.addEventListener("change", function () { refilter("q", box.value); });
    (filters || []).forEach(function (f) {
      const pick = el("select", { "aria-label": f.name, name: f.name },
        ...[""].concat(f.values).map(function (v) { return el("option", { value: v }, v || f.name + ": any"); }));
      pick.value = args.get(f.name) || "";
      pick.addEventListener("change", function () { refilter(f.name, pick.value); });
      tools.append(pick);
    });
    view.replaceChildren(el("h2", {}, title), tools, out);
    const query = new URLSearchParams(args);
    query.set("limit", limit);
    return api(endpoint + "?" + query).then(function (page) {
      const rows = page.rows || [];
      const nav = el("div", { class: "tools" });
      if (offset > 0) nav.append(button("previous", Math.max(0, offset - limit), null));
      if (page.more) nav.append(button("next", offset + limit, page.next));
      nav.append(el("span", { class: "muted" }, rows.length ? "rows " + (offset + 1) + "-" + (offset + rows.length) : ""));
      if (page.as_of) {
        nav.append(el("span", { class: "muted", id: "as-of" },
          " as of " + new Date(page.as_of).toLocaleTimeString() + (page.stale ? " (the crawl has moved on; refreshed every so often)" : "")));
      }
      out.replaceChildren(table(columns, rows, cell), nav);
      return page;
    });
    function button(label, to, after) {
      const b = el("button", {}, label);
      b.addEventListener("click", function () {
        const a = new URLSearchParams(args); a.set("offset", to);
        if (after !== null && after !== undefined) a.set("after", after); else a.delete("after");
        go(route, a);
      });
      return b;
    }
  }

  const routes = {
    summary: function () {
      return api("/api/status").then(function (s) {
        const figs = el("div", { class: "figures", id: "summary" },
          figure("state", s.state), figure("known", s.known), figure("done", s.done),
          figure("failed", s.failed), figure("queued", s.queued), figure("skipped", s.skipped),
          figure("broken", s.broken), figure("generation", s.generation));
        const classes = Object.entries(s.status_classes || {});
        const errors = Object.entries(s.errors || {});
        view.replaceChildren(el("h2", {}, "summary"),
          el("p", {}, "seeds: ", ...s.seeds.map(function (u) { return el("span", {}, pageLink(u), " "); })),
          figs,
          el("h2", {}, "status classes"),
          table(["class", "urls"], classes, function (r, c) { return c === "class" ? r[0] : r[1]; }),
          el("h2", {}, "errors"),
          table(["kind", "urls"], errors, function (r, c) { return c === "kind" ? r[0] : r[1]; }),
          el("div", { id: "hosts" }));
        return hostsInto(document.getElementById("hosts"));
      });
    },
    broken: function () {
      return paged("broken links", "/api/broken",
        ["target", "class", "status", "error", "source", "line", "anchor"],
        function (r, c) {
          if (c === "target") return pageLink(r.target);
          if (c === "source") return r.source ? pageLink(r.source) : "(no page links to it)";
          if (c === "class") return el("span", { class: "bad" }, r.class);
          return r[c];
        });
    },
    redirects: function () {
      return paged("redirect chains", "/api/redirects", ["start", "length", "final_status", "error", "chain"],
        function (r, c) {
          if (c === "start") return pageLink(r.start);
          if (c === "chain") return el("span", {}, ...r.chain.map(function (u, i) {
            return el("span", {}, i ? " \u2192 " : "", pageLink(u));
          }));
          return r[c];
        });
    },
    depth: function () {
      return paged("pages per depth", "/api/depth", ["depth", "recorded", "shortest", ""], function (r, c) {
        if (c === "") return el("span", { class: "bar", style: "width:" + Math.min(20, Math.log2(1 + (r.recorded || r.shortest || 0)) * 1.5) + "rem" });
        return c === "depth" && r.depth === null ? "unreached" : r[c];
      });
    },
    top: function () {
      return paged("most-linked pages", "/api/top", ["url", "in_degree", "pagerank"], function (r, c) {
        if (c === "url") return pageLink(r.url);
        if (c === "pagerank") return r.pagerank === null ? null : r.pagerank.toPrecision(4);
        return r[c];
      });
    },
    orphans: function () {
      return paged("orphans (only a sitemap links to them)", "/api/orphans", ["url", "status", "state"],
        function (r, c) { return c === "url" ? pageLink(r.url) : r[c]; });
    },
    pages: function () {
      return paged("pages", "/api/pages", ["url", "status", "depth", "title", "content_type"],
        function (r, c) {
          if (c === "url") return pageLink(r.url);
          if (c === "status") return statusCell(r.status, r.state);
          return r[c];
        },
        [{ name: "state", values: ["done", "failed", "skipped", "queued"] },
         { name: "class", values: ["2xx", "3xx", "4xx", "5xx"] }]);
    },
    hosts: function () {
      const box = el("div", {});
      view.replaceChildren(box);
      return hostsInto(box);
    },
    page: pageView,
    live: liveView,
  };

  function hostsInto(box) {
    return api("/api/hosts").then(function (h) { hostsTable(box, h.rows); });
  }

  // A running crawl's hosts (from its memory) or a file's (from its urls table).
  const hostColumns = {
    live: ["host", "in flight", "delay", "paused until", "robots", "pages", "errors"],
    file: ["host", "urls", "done", "failed", "queued", "errors", "paused until"],
  };
  function hostsTable(box, rows) {
    const running = rows.length > 0 && "in_flight" in rows[0];
    box.replaceChildren(el("h2", {}, "hosts"), table(hostColumns[running ? "live" : "file"], rows,
      function (r, c) {
        if (c === "paused until") return r.paused_until ? new Date(r.paused_until).toLocaleTimeString() : null;
        if (c === "in flight") return r.in_flight;
        if (c === "delay") return r.delay_ms === null ? null : r.delay_ms + " ms";
        if (c === "robots") return r.robots === "read" ? "read, " + r.robots_rules + " rules" : r.robots;
        return r[c];
      }));
    box.querySelectorAll("tbody tr").forEach(function (tr, i) {
      const r = rows[i];
      if (!r) return;
      tr.firstChild.setAttribute("data-host", r.host);
      if (running) {
        tr.children[1].setAttribute("data-in-flight", r.in_flight === null ? "" : r.in_flight);
        tr.children[2].setAttribute("data-delay-ms", r.delay_ms === null ? "" : r.delay_ms);
        tr.children[3].setAttribute("data-paused-until", r.paused_until || "");
        tr.children[4].setAttribute("data-robots", r.robots);
      }
    });
  }

  function recentInto(box, r) {
    const cols = ["url", "status", "error", "ms"];
    const cell = function (x, c) {
      if (c === "url") return pageLink(x.url);
      if (c === "status") return statusCell(x.status, x.error_kind ? "failed" : "");
      if (c === "error") return x.error_kind;
      return x.fetch_ms;
    };
    box.replaceChildren(el("h2", {}, "last pages"), table(cols, r.pages, cell),
      el("h2", {}, "last errors"), table(cols, r.errors, cell));
  }

  function pageView() {
    const { args } = params();
    const url = args.get("url");
    const query = new URLSearchParams(args);
    return api("/api/page?" + query).then(function (p) {
      const u = p.url;
      const links = function (title, list, id) {
        return el("section", { id }, el("h2", {}, title + (list.more ? " (first " + list.rows.length + ")" : "")),
          table(["url", "status", "kind", "anchor", "line"], list.rows, function (r, c) {
            if (c === "url") return pageLink(r.url + (r.fragment ? "" : ""));
            if (c === "status") return statusCell(r.status, r.state);
            return r[c];
          }));
      };
      view.replaceChildren(
        el("h2", {}, "page"),
        el("p", {}, el("a", { href: u.url, rel: "noreferrer", id: "page-url" }, u.url)),
        el("div", { class: "figures", id: "page" },
          figure("status", u.status === null ? u.state : u.status), figure("state", u.state),
          figure("depth", u.depth), figure("fetch_ms", u.fetch_ms, "fetch ms"), figure("size", u.size, "bytes")),
        el("p", {}, u.title ? "title: " : "", u.title || "", u.error ? el("span", { class: "bad" }, " error: " + u.error_kind + ": " + u.error) : ""),
        links("inlinks (" + p.inlinks_total + " in all)", p.inlinks, "inlinks"), links("outlinks", p.outlinks, "outlinks"));
    }, function (e) {
      view.replaceChildren(el("h2", {}, "page"), el("p", { class: "bad" }, (url || "") + ": " + e.message));
    });
  }

  // The live section: the snapshot with its hosts and last pages every second (all from
  // the crawl's memory).
  const history = [];
  function liveView() {
    const figs = el("div", { class: "figures", id: "live" });
    const chart = el("div", {});
    const errors = el("div", {});
    const hosts = el("div", { id: "hosts" });
    const recent = el("div", {});
    const crawl = el("div", { id: "crawl-wide" });
    view.replaceChildren(el("h2", {}, "live"), figs, crawl, chart, errors, hosts, recent);
    function tick() {
      return api("/api/live").then(function (s) {
        if (!s.running) { figs.replaceChildren(el("p", {}, "no crawl runs in this process")); return; }
        history.push({ t: s.elapsed_ms, pages: s.pages + s.failed });
        if (history.length > 300) history.shift();
        figs.replaceChildren(figure("pages", s.pages, "pages done"), figure("failed", s.failed),
          figure("rate", s.rate.toFixed(1), "pages/s"), figure("queued", s.queued),
          figure("fetching", s.fetching), figure("waiting", s.waiting),
          figure("in_flight", s.in_flight, "in flight"), figure("retries", s.retries));
        // A Redis crawl: what every process sees (this process's figures are above).
        const c = s.crawl;
        crawl.replaceChildren(...(c ? [el("h2", {}, "whole crawl (every process)"),
          el("div", { class: "figures" }, figure("crawl-processes", c.processes, "processes"),
            figure("crawl-pages", c.pages, "pages done"), figure("crawl-known", c.known, "known"),
            figure("crawl-queued", c.queued, "queued"), figure("crawl-leased", c.leased, "leased"),
            figure("crawl-fetching", c.fetching, "fetching"), figure("crawl-waiting", c.waiting, "waiting"),
            figure("crawl-retrying", c.retrying, "retrying"))] : []));
        chart.replaceChildren(el("h2", {}, "pages per second"), rateChart());
        errors.replaceChildren(el("h2", {}, "errors by kind"),
          table(["kind", "count"], Object.entries(s.errors), function (r, c) { return c === "kind" ? r[0] : r[1]; }));
        hostsTable(hosts, s.hosts);
        recentInto(recent, s.recent);
      });
    }
    timers.push(setInterval(tick, 1000));
    return tick();
  }

  // Pages per second between successive polls, as an SVG polyline.
  function rateChart() {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "chart");
    svg.setAttribute("viewBox", "0 0 300 100");
    svg.setAttribute("preserveAspectRatio", "none");
    const rates = [];
    for (let i = 1; i < history.length; i++) {
      const dt = (history[i].t - history[i - 1].t) / 1000;
      rates.push(dt > 0 ? (history[i].pages - history[i - 1].pages) / dt : 0);
    }
    const max = Math.max(1, ...rates);
    const points = rates.map(function (r, i) {
      return (i * 300 / Math.max(1, rates.length - 1)).toFixed(1) + "," + (98 - r / max * 95).toFixed(1);
    });
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", points.join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", "#0b5cad");
    line.setAttribute("stroke-width", "2");
    svg.append(line);
    const label = el("p", { class: "muted" }, "peak " + max.toFixed(1) + " pages/s over the last " + rates.length + " s");
    return el("div", {}, svg, label);
  }

  function show() {
    timers.forEach(clearInterval);
    timers = [];
    const { route } = params();
    document.querySelectorAll("#tabs a").forEach(function (a) {
      a.classList.toggle("current", a.dataset.tab === route);
      a.setAttribute("href", search + "#/" + a.dataset.tab);
    });
    const draw = routes[route] || routes.summary;
    Promise.resolve(draw()).then(function () { document.body.setAttribute("data-ready", route); },
      function (e) { view.replaceChildren(el("p", { class: "bad" }, e.message)); document.body.setAttribute("data-ready", "error"); });
  }

  window.addEventListener("hashchange", show);
  api("/api/live").then(function (s) { live = !!s.running; }, function () {}).then(function () {
    document.querySelector('[data-tab="live"]').hidden = !live;
    show();
  });
})();
