// The dashboard's one script (docs/design/web.md). The pages work without it
// (forms post and redirect back); with it they stay live from /events,
// actions post without reloading the page, the fleet filters as you type,
// and a harness page runs its terminal (vendor/xterm) over /h/NAME/attach.
(function () {
  'use strict';
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.content : '';
  var toast = document.getElementById('toast');

  function say(msg, bad) {
    if (!toast) return;
    toast.textContent = msg;
    toast.className = bad ? 'bad' : '';
    toast.hidden = false;
    clearTimeout(say.t);
    say.t = setTimeout(function () { toast.hidden = true; }, bad ? 8000 : 3000);
  }

  // toLogin goes to the sign-in page when the session has ended, asking
  // it to come back here (the server keeps only a path of its own).
  function toLogin() {
    var here = location.pathname + location.search;
    location.href = here === '/' ? '/login' : '/login?next=' + encodeURIComponent(here);
  }

  // The fleet filter: words that must all appear in a row.
  var filter = document.getElementById('filter');
  function applyFilter() {
    if (!filter) return;
    var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    document.querySelectorAll('tr.unit').forEach(function (tr) {
      var hay = (tr.getAttribute('data-filter') || '').toLowerCase();
      tr.hidden = !words.every(function (w) { return hay.indexOf(w) >= 0; });
    });
    document.querySelectorAll('section.group').forEach(function (g) {
      g.hidden = !g.querySelector('tr.unit:not([hidden])');
    });
  }
  if (filter) {
    filter.addEventListener('input', applyFilter);
    filter.form.addEventListener('submit', function (e) { e.preventDefault(); applyFilter(); });
  }

  // Live refresh: an event marks the page stale; one fetch of its live
  // part at a time, coalescing the events that arrive meanwhile.
  var live = document.getElementById('live');
  var timer = null, inflight = false, again = false;
  // A press on the live part holds its redraw until the press ends: a
  // redraw between a button's press and release replaces the button, and
  // the browser then fires no click (the press is lost). The held redraw
  // is put in after the click.
  var pressed = false, held = null, shown = null;
  function draw(html) {
    // A fragment that brings nothing new leaves the nodes as they are: a
    // link or button under the pointer, a selection, stay the person's.
    if (html === shown) {
      document.body.setAttribute('data-refreshed', String(Date.now()));
      return;
    }
    shown = html;
    // A section the person opened or closed stays so (the fragment comes
    // with each section's default).
    var open = {};
    live.querySelectorAll('details[class]').forEach(function (d) { open[d.className] = d.open; });
    live.innerHTML = html;
    live.querySelectorAll('details[class]').forEach(function (d) {
      if (d.className in open) d.open = open[d.className];
    });
    applyFilter();
    document.body.setAttribute('data-refreshed', String(Date.now()));
  }
  function release() {
    if (!pressed) return;
    pressed = false;
    setTimeout(function () {
      if (held === null) return;
      var html = held;
      held = null;
      document.body.removeAttribute('data-refresh-held');
      draw(html);
    }, 0);
  }
  if (live) {
    live.addEventListener('pointerdown', function () {
      pressed = true;
      // A release the page never hears of (the window lost focus, the
      // pointer left it) must not freeze it: 5 s is no click any more.
      clearTimeout(release.t);
      release.t = setTimeout(release, 5000);
    });
    ['pointerup', 'pointercancel'].forEach(function (type) { document.addEventListener(type, release); });
    window.addEventListener('blur', release);
  }
  function refresh() {
    if (!live) return;
    if (inflight) { again = true; return; }
    inflight = true;
    fetch(live.getAttribute('data-fragment'), { credentials: 'same-origin', headers: { 'Accept': 'text/x-fragment' } })
      .then(function (r) {
        // Signed out: a page's GET is sent to the sign-in page, which
        // fetch follows; that page is no fragment to draw.
        if (r.status === 401 || r.redirected) { toLogin(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html === null || html === undefined) return;
        if (pressed) {
          held = html;
          document.body.setAttribute('data-refresh-held', '1');
        } else {
          draw(html);
        }
      })
      .catch(function () {})
      .then(function () {
        inflight = false;
        if (again) { again = false; refresh(); }
      });
  }
  function stale() {
    if (timer) return;
    timer = setTimeout(function () { timer = null; refresh(); }, 30);
  }
  // How many agents wait: in the title ("(2) Fleet · harness") and on
  // the installed app's badge, fetched again when an agent's state, a
  // unit's state or the stream itself says it may have changed.
  var baseTitle = document.body.getAttribute('data-title') || document.title;
  var countTimer = null;
  function showWaiting(n) {
    document.title = (n > 0 ? '(' + n + ') ' : '') + baseTitle;
    document.body.setAttribute('data-waiting', String(n));
    if (navigator.setAppBadge) {
      (n > 0 ? navigator.setAppBadge(n) : navigator.clearAppBadge()).catch(function () {});
    }
  }
  function recount() {
    if (countTimer) return;
    countTimer = setTimeout(function () {
      countTimer = null;
      fetch('/waiting', { credentials: 'same-origin', headers: { 'Accept': 'application/json' } })
        .then(function (r) { return r.ok && !r.redirected ? r.json() : null; })
        .then(function (v) { if (v && typeof v.waiting === 'number') showWaiting(v.waiting); })
        .catch(function () {});
    }, 50);
  }
  function onUnit(e) {
    stale();
    try {
      var ev = JSON.parse(e.data);
      if (ev.kind === 'agent' || ev.kind === 'state' || ev.kind === 'exit' || ev.kind === 'reload' || ev.kind === 'host') recount();
    } catch (err) { recount(); }
  }

  // One event stream per page, shared by the live part, the waiting
  // count and the terminal.
  var es = (document.body.hasAttribute('data-title') && window.EventSource) ? new EventSource('/events') : null;
  if (es) {
    es.addEventListener('unit', onUnit);
    es.addEventListener('resync', function () { stale(); recount(); });
    es.addEventListener('signedout', toLogin);
    es.onopen = function () { document.body.setAttribute('data-live', '1'); stale(); recount(); };
  }

  // The app's service worker: the shell for a phone on a poor network.
  if ('serviceWorker' in navigator && document.body.hasAttribute('data-title')) {
    navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch(function () {});
  }

  // The turns of a harness's agent (its page, following the current run):
  // read again when the agent's state or the run changes, and twice more
  // a little later, because an agent writes its transcript after it has
  // drawn its answer (Claude Code's last lines come up to ~3 s late).
  var turnsBusy = false, turnsAgain = false, turnsTimers = [];
  function refreshTurns() {
    var el = document.getElementById('turns');
    if (!el) return;
    if (turnsBusy) { turnsAgain = true; return; }
    turnsBusy = true;
    fetch(el.getAttribute('data-fragment'), { credentials: 'same-origin', headers: { 'Accept': 'text/x-fragment' } })
      .then(function (r) {
        if (r.redirected) { toLogin(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html) {
          el.outerHTML = html;
          document.body.setAttribute('data-turns-refreshed', String(Date.now()));
        }
      })
      .catch(function () {})
      .then(function () {
        turnsBusy = false;
        if (turnsAgain) { turnsAgain = false; refreshTurns(); }
      });
  }
  var turnsEl = document.getElementById('turns');
  if (es && turnsEl && turnsEl.getAttribute('data-follow') === '1') {
    var turnsOf = turnsEl.getAttribute('data-name');
    var turnsStale = function () {
      turnsTimers.forEach(clearTimeout);
      turnsTimers = [50, 1500, 4000].map(function (ms) { return setTimeout(refreshTurns, ms); });
    };
    es.addEventListener('unit', function (m) {
      var ev = JSON.parse(m.data);
      if (ev.unit === turnsOf && (ev.kind === 'agent' || ev.kind === 'state' || ev.kind === 'exit')) turnsStale();
    });
    es.addEventListener('resync', turnsStale);
  }

  // Actions post with the CSRF header and stay on the page.
  document.addEventListener('submit', function (e) {
    var f = e.target;
    // The new-agent form posts as a page: it goes on to the new harness,
    // or comes back with the refusal's text.
    if (f.method.toLowerCase() !== 'post' || f.getAttribute('action') === '/logout' || f.id === 'new-agent') return;
    e.preventDefault();
    var body = new URLSearchParams(new FormData(f));
    // The fleet's rows share one form: the pressed button names the action.
    var action = (e.submitter && e.submitter.getAttribute('formaction')) || f.getAttribute('action');
    var buttons = e.submitter && e.submitter.hasAttribute('formaction') ? [e.submitter] : f.querySelectorAll('button');
    buttons.forEach(function (b) { b.disabled = true; });
    fetch(action, {
      method: 'POST', credentials: 'same-origin', body: body,
      headers: { 'X-CSRF-Token': csrf, 'Content-Type': 'application/x-www-form-urlencoded' }
    }).then(function (r) {
      return r.text().then(function (t) {
        if (!r.ok) { say(t.trim() || r.statusText, true); return; }
        if (f.id === 'review') { reviewSent(t); return; }
        say((action.split('/').pop()) + ': done');
        if (f.id === 'send') { var i = f.querySelector('input[name="text"]'); if (i) i.value = ''; }
        refresh();
      });
    }).catch(function (err) { say(String(err), true); })
      .then(function () { buttons.forEach(function (b) { b.disabled = false; }); });
  });

  // The Changes view: tap a line to comment on it; the comments gather in
  // the Send review form as path:line: text. The section is read again
  // when the agent finishes a turn, unless comments are being written.
  function changes() { return document.getElementById('changes'); }
  function reviewList() { return document.getElementById('review-list'); }
  function mayReview() {
    var t = document.getElementById('review-typed');
    return t && !t.disabled;
  }
  function make(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }
  function addComment(tr, text) {
    var c = tr.getAttribute('data-path') + ':' + tr.getAttribute('data-line') + ': ' + text;
    var li = make('li', 'comment', c);
    var input = make('input');
    input.type = 'hidden'; input.name = 'comment'; input.value = c;
    var rm = make('button', 'rm', '×');
    rm.type = 'button'; rm.title = 'remove this comment';
    var mark = make('tr', 'cmt');
    var td = make('td', '', 'comment: ' + text);
    td.colSpan = 3;
    mark.appendChild(td);
    tr.parentNode.insertBefore(mark, tr.nextSibling);
    rm.addEventListener('click', function () { li.remove(); mark.remove(); });
    li.appendChild(input); li.appendChild(rm);
    reviewList().appendChild(li);
  }
  function openEditor(tr) {
    var next = tr.nextSibling;
    if (next && next.classList && next.classList.contains('cbox')) { next.querySelector('textarea').focus(); return; }
    var box = make('tr', 'cbox');
    var td = make('td');
    td.colSpan = 3;
    var ta = make('textarea');
    ta.rows = 2;
    ta.placeholder = 'comment on ' + tr.getAttribute('data-path') + ':' + tr.getAttribute('data-line');
    var add = make('button', 'add-comment', 'Add comment');
    add.type = 'button';
    var cancel = make('button', 'cancel', 'Cancel');
    cancel.type = 'button';
    add.addEventListener('click', function () {
      var text = ta.value.trim();
      if (!text) { ta.focus(); return; }
      box.remove();
      addComment(tr, text);
    });
    cancel.addEventListener('click', function () { box.remove(); });
    td.appendChild(ta); td.appendChild(add); td.appendChild(cancel);
    box.appendChild(td);
    tr.parentNode.insertBefore(box, tr.nextSibling);
    ta.focus();
  }
  document.addEventListener('click', function (e) {
    var tr = e.target.closest && e.target.closest('#changes tr[data-line]');
    if (tr && mayReview()) openEditor(tr);
  });
  function reviewSent(body) {
    var status = 'queued';
    try { status = JSON.parse(body).result.status || status; } catch (err) {}
    var l = reviewList();
    if (l) l.textContent = '';
    var t = document.getElementById('review-typed');
    if (t) t.value = '';
    document.querySelectorAll('#changes tr.cmt').forEach(function (r) { r.remove(); });
    say('review: ' + status + (status === 'queued' ? ' (typed once the agent is ready)' : ''));
  }
  function refreshChanges() {
    var el = changes();
    if (!el) return;
    var l = reviewList(), t = document.getElementById('review-typed');
    if ((l && l.children.length) || (t && t.value) || el.querySelector('tr.cbox')) return;
    fetch(el.getAttribute('data-fragment'), { credentials: 'same-origin', headers: { 'Accept': 'text/x-fragment' } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        el.outerHTML = html;
        document.body.setAttribute('data-changes-refreshed', String(Date.now()));
      })
      .catch(function () {});
  }
  var changesEl = changes();
  if (es && changesEl) {
    var changesOf = changesEl.getAttribute('data-name');
    es.addEventListener('unit', function (m) {
      var ev = JSON.parse(m.data);
      if (ev.unit === changesOf && ev.kind === 'turn_done') refreshChanges();
    });
  }

  // The terminal.
  var el = document.getElementById('term');
  if (el && window.Terminal) terminal(el);

  function terminal(el) {
    var name = el.getAttribute('data-name');
    var writer = el.getAttribute('data-writer') === '1';
    var status = document.getElementById('term-status');
    var term = new window.Terminal({ fontSize: 13, fontFamily: 'monospace', scrollback: 2000, cursorBlink: writer });
    term.open(el);
    var enc = new TextEncoder();
    var ws = null, retry = 500, ended = false;
    var api = { term: term, writer: writer, notices: [], listeners: [], send: function (s) { if (ws) ws.send(enc.encode(s)); } };
    window.harnessAttach = api;

    function setStatus(s) { if (status) status.textContent = s; el.setAttribute('data-status', s); }

    function size() {
      var probe = document.createElement('span');
      probe.style.cssText = 'position:absolute;visibility:hidden;font:13px monospace;white-space:pre';
      probe.textContent = 'WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW';
      document.body.appendChild(probe);
      var cw = probe.getBoundingClientRect().width / 50;
      document.body.removeChild(probe);
      var cols = Math.floor((el.clientWidth - 16) / (cw || 8));
      return { cols: Math.max(20, Math.min(300, cols)), rows: 30 };
    }

    function connect() {
      var want = size();
      if (writer) term.resize(want.cols, want.rows);
      var proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
      ws = new WebSocket(proto + '//' + location.host + '/h/' + encodeURIComponent(name) + '/attach');
      ws.binaryType = 'arraybuffer';
      setStatus('connecting…');
      ws.onopen = function () {
        ws.send(JSON.stringify({ csrf: csrf, cols: want.cols, rows: want.rows }));
      };
      ws.onmessage = function (m) {
        if (typeof m.data !== 'string') {
          var bytes = new Uint8Array(m.data);
          term.write(bytes);
          api.listeners.forEach(function (f) { f(bytes); });
          return;
        }
        var ev = JSON.parse(m.data);
        api.notices.push(ev);
        if (ev.kind === 'attached') {
          retry = 500;
          if (ev.cols && ev.rows) term.resize(ev.cols, ev.rows);
          setStatus(writer ? 'live' : 'live, read-only');
          el.setAttribute('data-attached', '1');
        } else if (ev.kind === 'restarted') {
          setStatus('restarted (run ' + ev.run_id + ')');
        } else if (ev.kind === 'ended') {
          ended = true;
          setStatus('ended: ' + (ev.message || ev.state || ''));
        } else {
          // A notice with a size: the agent's terminal stays that size
          // (never below the harness's own), so the screen is shown at it.
          if (ev.cols && ev.rows) term.resize(ev.cols, ev.rows);
          say(ev.message || ev.kind, true);
        }
      };
      ws.onclose = function () {
        ws = null;
        el.removeAttribute('data-attached');
        if (ended) return;
        setStatus('disconnected; retrying…');
        setTimeout(connect, retry);
        retry = Math.min(retry * 2, 5000);
      };
    }

    term.onData(function (d) { if (ws && ws.readyState === 1) ws.send(enc.encode(d)); });
    if (writer) {
      var rt = null;
      window.addEventListener('resize', function () {
        clearTimeout(rt);
        rt = setTimeout(function () {
          var s = size();
          if (s.cols === term.cols && s.rows === term.rows) return;
          term.resize(s.cols, s.rows);
          if (ws && ws.readyState === 1) ws.send(JSON.stringify({ type: 'resize', cols: s.cols, rows: s.rows }));
        }, 200);
      });
    }
    // A stopped harness that starts again gets a fresh viewer.
    if (es) {
      es.addEventListener('unit', function (m) {
        var ev = JSON.parse(m.data);
        if (ev.unit === name && ev.kind === 'state' && ev.state === 'running' && ended) {
          ended = false;
          connect();
        }
      });
    }
    connect();
  }
})();
