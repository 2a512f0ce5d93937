// spine's one script: every page works without it; with it, a page
// follows its server-sent events and loads more without a reload.
//
//   <main data-events="URL">      listen to URL (events "ready", "change", "end");
//                                 each ready is a change of every part
//   <x data-part="NAME">          with data-refresh or data-tail: fetched only
//                                 on a change whose data's "parts" names NAME
//                                 (or that names none)
//   <x data-refresh="URL">        on a change, replace x's content with URL's
//                                 (when it reads otherwise than x does now;
//                                 an aria-live element inside with an id
//                                 keeps its node, its content updated)
//   <x data-tail="URL" data-after="N">
//                                 on a change, append URL?after=N's items to x
//                                 (an item whose id x holds replaces it);
//                                 the answer's Spine-After header is the next N;
//                                 its Spine-More says more is waiting: again
//   <a data-more="#x" href="URL"> on a click, append URL's items to #x; the
//                                 answer's Spine-More header is the next URL
//                                 (none: the link goes away)
// Every fetch adds fragment=1: the server answers with the items alone.
// <html data-live="on"> while the event stream is open ("off" when it
// cannot open: the page then reloads every 30 s); data-updates counts the
// changes applied (tests wait on it).
(function () {
  'use strict';
  var root = document.documentElement;
  var reloadAfter = 30000; // ms: how often a page whose stream cannot open reloads

  function fragmentURL(url, extra) {
    var u = new URL(url, location.href);
    u.searchParams.set('fragment', '1');
    for (var k in extra) u.searchParams.set(k, extra[k]);
    return u.toString();
  }

  function get(url) {
    return fetch(url, {credentials: 'same-origin', headers: {'Accept': 'text/html'}}).then(function (r) {
      if (!r.ok) throw new Error(url + ': ' + r.status);
      return r.text().then(function (html) { return {html: html, headers: r.headers}; });
    });
  }

  function append(into, html) {
    var t = document.createElement('template');
    t.innerHTML = html;
    var first = t.content.firstElementChild;
    into.appendChild(t.content);
    return first;
  }

  // Append html's items to into; an item whose id is already in into
  // replaces that element instead (a step a late result changed).
  function put(into, html) {
    var t = document.createElement('template');
    t.innerHTML = html;
    Array.prototype.slice.call(t.content.children).forEach(function (item) {
      var old = item.id && into.querySelector('#' + CSS.escape(item.id));
      if (old) old.replaceWith(item);
    });
    into.appendChild(t.content);
  }

  function counted() { root.dataset.updates = String((+root.dataset.updates || 0) + 1); }

  // One update at a time per element; a change during one runs once more after it.
  function serial(el, run) {
    if (el._busy) { el._again = true; return; }
    el._busy = true;
    run().catch(function () {}).then(function () {
      el._busy = false;
      if (el._again) { el._again = false; serial(el, run); }
    });
  }

  // Replace el's content with html's, unless it reads the same (then
  // nothing is touched, so nothing is read out again). A live region
  // inside el keeps its element, its content updated only when it moved,
  // so a screen reader reads out that change alone.
  function replace(el, html) {
    var t = document.createElement('template');
    t.innerHTML = html;
    if (t.innerHTML === el.innerHTML) return;
    el.querySelectorAll('[aria-live][id]').forEach(function (live) {
      var fresh = t.content.getElementById(live.id);
      if (!fresh) return;
      if (fresh.innerHTML !== live.innerHTML) live.innerHTML = fresh.innerHTML;
      fresh.replaceWith(live);
    });
    el.replaceChildren(t.content);
  }

  function refresh(el) {
    serial(el, function () {
      return get(fragmentURL(el.dataset.refresh)).then(function (r) {
        replace(el, r.html);
        counted();
      });
    });
  }

  function tail(el) {
    serial(el, function () {
      return get(fragmentURL(el.dataset.tail, {after: el.dataset.after || '0'})).then(function (r) {
        if (r.html.trim() !== '') put(el, r.html);
        var next = r.headers.get('Spine-After');
        if (next) el.dataset.after = next;
        if (r.headers.get('Spine-More')) el._again = true; // a page's worth came: fetch the rest
        counted();
      });
    });
  }

  // The parts a change names (its data's "parts"), or null: every part.
  function partsOf(e) {
    try { var p = JSON.parse(e.data).parts; return Array.isArray(p) ? p : null; } catch (err) { return null; }
  }

  // An element with data-part is fetched again only on a change that names
  // its part; one without, on every change.
  function onChange(e) {
    var parts = e && e.data ? partsOf(e) : null;
    var moved = function (el) { return !parts || !el.dataset.part || parts.indexOf(el.dataset.part) >= 0; };
    document.querySelectorAll('[data-refresh]').forEach(function (el) { if (moved(el)) refresh(el); });
    document.querySelectorAll('[data-tail]').forEach(function (el) { if (moved(el)) tail(el); });
  }

  function listen(url) {
    if (!window.EventSource) return;
    var es = new EventSource(url);
    // The stream's baseline is when it opened, not when the page was
    // rendered (nor, on a reconnect, when the last stream closed): what
    // moved in between comes with one look on every ready.
    es.addEventListener('ready', function () { root.dataset.live = 'on'; onChange(null); });
    es.addEventListener('change', onChange);
    es.addEventListener('end', function () { root.dataset.live = 'ended'; es.close(); onChange(null); });
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) { fallBack(); return; }
      if (root.dataset.live === 'on') root.dataset.live = 'reconnecting';
    };
  }

  // A stream that cannot open (a 429: too many open pages; a page gone)
  // is not retried: the page reloads now and then instead, as without script.
  function fallBack() {
    root.dataset.live = 'off';
    setTimeout(function () { location.reload(); }, reloadAfter);
  }

  document.addEventListener('click', function (e) {
    var a = e.target.closest && e.target.closest('a[data-more]');
    if (!a) return;
    var into = document.querySelector(a.dataset.more);
    if (!into) return;
    e.preventDefault();
    a.setAttribute('aria-busy', 'true');
    get(fragmentURL(a.href)).then(function (r) {
      var first = append(into, r.html);
      var next = r.headers.get('Spine-More');
      if (next) { a.href = next; a.removeAttribute('aria-busy'); } else { a.remove(); }
      if (first) { first.setAttribute('tabindex', '-1'); first.focus(); }
      counted();
    }).catch(function () { a.removeAttribute('aria-busy'); location.href = a.href; });
  });

  document.addEventListener('DOMContentLoaded', function () {
    var main = document.querySelector('main[data-events]');
    if (main) listen(main.dataset.events);
  });
})();
