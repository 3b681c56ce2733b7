// lathe's page: live calls, pending approvals, the audit log, the catalog
// and the grants, all read from the HTTP JSON API under /api/.
//
// Every value that came from a tool, a model or a client is put in the page
// as text (textContent, Element.append of a string, setAttribute), never
// parsed as HTML: a tool named "<img onerror=…>" shows those characters.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);

  // csrf is the value every request carries in X-Lathe-CSRF (the event
  // stream, in its query); null until the page has a session. It is kept in
  // this origin's sessionStorage, so that a reload keeps the session: the
  // cookie alone is worth nothing, since browsers send it to every port of
  // the host, and so to other users' servers on localhost.
  let csrf = null;
  const csrfKey = 'lathe-csrf';
  let events = null;
  const calls = new Map(); // by seq, the engine's number of the call
  const rows = new Map(); // the calls' rows as drawn, by the same key
  let approvals = [];
  let view = 'calls';
  let auditNext = '';
  let auditQuery = '';

  // el builds an element. Children that are strings become text nodes;
  // props set only attribute names written in this file.
  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'onclick') e.addEventListener('click', v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of kids) {
      if (c == null || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  function clear(node, ...kids) {
    node.replaceChildren(...kids);
    return node;
  }

  function flash(msg) {
    const f = $('flash');
    f.textContent = msg;
    f.hidden = !msg;
  }

  // api sends one request and returns its JSON, or throws an Error that
  // carries the status and the API's error kind and message.
  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (csrf) headers['X-Lathe-CSRF'] = csrf;
    const r = await fetch(path, {
      method, headers, credentials: 'same-origin', cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let data = null;
    try { data = text ? JSON.parse(text) : {}; } catch (_) { data = null; }
    if (!r.ok) {
      const e = (data && data.error) || {};
      const err = new Error(e.message || text.trim() || r.statusText || ('HTTP ' + r.status));
      err.status = r.status;
      err.kind = e.kind || '';
      if (r.status === 401 && path !== '/api/login' && csrf !== null) loggedOut('The session ended: log in again.');
      throw err;
    }
    return data || {};
  }

  // Values for people.

  function when(t) {
    if (!t) return '';
    const d = new Date(t);
    if (isNaN(d)) return String(t);
    const today = new Date().toDateString() === d.toDateString();
    return today ? d.toLocaleTimeString() : d.toLocaleString();
  }

  function ms(n) {
    if (n == null || n === '' || isNaN(n)) return '';
    n = Number(n);
    if (n < 1) return n.toFixed(2) + ' ms';
    if (n < 1000) return Math.round(n) + ' ms';
    if (n < 60000) return (n / 1000).toFixed(1) + ' s';
    return Math.floor(n / 60000) + ' min ' + Math.round((n % 60000) / 1000) + ' s';
  }

  // durationOf reads a duration in milliseconds, or in nanoseconds where
  // a record says so (the audit log's own field).
  function durationOf(x) {
    if (x.duration_ms != null) return x.duration_ms;
    if (x.duration_ns != null) return x.duration_ns / 1e6;
    return null;
  }

  function outcomeClass(o) {
    if (!o || o === 'running') return 'outcome-running';
    if (o === 'ok') return 'outcome-ok';
    if (o === 'question') return 'outcome-question';
    return 'outcome-bad';
  }

  // parseArgs accepts arguments as an object or as JSON text (the audit
  // log keeps them as text).
  function parseArgs(a) {
    if (typeof a === 'string') {
      try { return JSON.parse(a); } catch (_) { return a; }
    }
    return a;
  }

  function valueText(v, max) {
    let s = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
    if (s === undefined) s = String(v);
    if (max && s.length > max) s = s.slice(0, max) + '… (' + s.length + ' characters)';
    return s;
  }

  // renderArgs shows arguments as a list of names and values: a string as
  // itself, anything else as indented JSON.
  function renderArgs(a, max) {
    a = parseArgs(a);
    if (a == null) return el('span', { class: 'meta' }, 'none');
    if (typeof a !== 'object' || Array.isArray(a)) return el('pre', null, valueText(a, max));
    const keys = Object.keys(a);
    if (keys.length === 0) return el('span', { class: 'meta' }, 'none');
    const dl = el('dl', { class: 'args' });
    for (const k of keys) dl.append(el('dt', null, k), el('dd', null, valueText(a[k], max)));
    return dl;
  }

  function renderContent(result) {
    if (!result) return null;
    const box = el('div', null);
    if (result.isError) box.append(el('p', { class: 'outcome-bad' }, 'The tool reported an error.'));
    for (const c of result.content || []) {
      if (c.type === 'text') box.append(el('pre', null, c.text || ''));
      else box.append(el('pre', { class: 'meta' }, valueText(c, 2000)));
    }
    if (result.structuredContent !== undefined) {
      box.append(el('h4', null, 'structured'), el('pre', null, valueText(result.structuredContent)));
    }
    return box;
  }

  // Views.

  const loaders = {
    calls: loadCalls,
    approvals: loadApprovals,
    audit: () => (auditQuery === '' ? searchAudit() : Promise.resolve()),
    catalog: loadCatalog,
    grants: loadGrants,
  };

  function route() {
    const v = (location.hash || '#calls').slice(1);
    view = Object.prototype.hasOwnProperty.call(loaders, v) ? v : 'calls';
    for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== 'view-' + view;
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.view === view);
    guard(loaders[view]());
  }

  function guard(p) {
    return Promise.resolve(p).catch((e) => {
      if (e.status !== 401) flash(e.message);
    });
  }

  // Calls.

  async function loadCalls() {
    const r = await api('GET', '/api/calls');
    const fresh = new Map();
    for (const c of r.calls || []) fresh.set(keyOf(c), c);
    // Calls the list does not hold yet but an event announced stay.
    for (const [k, c] of calls) if (!fresh.has(k) && c.state === 'running') fresh.set(k, c);
    calls.clear();
    for (const [k, c] of fresh) calls.set(k, c);
    renderCalls();
  }

  function keyOf(c) {
    return c.seq != null ? 'seq:' + c.seq : 'id:' + c.id;
  }

  function renderCalls() {
    const list = [...calls.values()].sort((a, b) => {
      const ra = a.state === 'running' ? 1 : 0, rb = b.state === 'running' ? 1 : 0;
      if (ra !== rb) return rb - ra;
      return (b.seq || 0) - (a.seq || 0);
    });
    // A row is drawn again only when what it shows changed, and the rows
    // move only when their order did: a row under the pointer stays, so
    // a click on it is not lost.
    const keep = new Set();
    const ordered = list.map((c) => {
      const k = keyOf(c);
      keep.add(k);
      const sig = JSON.stringify([c.state, c.outcome, c.state === 'running' ? null : c.duration_ms, c.waiting,
        c.progress, c.client, c.session, c.started, c.arguments, c.tool]);
      const old = rows.get(k);
      if (old && old.sig === sig) return old.tr;
      const tr = callRow(c);
      if (old) old.tr.replaceWith(tr);
      rows.set(k, { sig, tr });
      return tr;
    });
    for (const k of [...rows.keys()]) if (!keep.has(k)) { rows.get(k).tr.remove(); rows.delete(k); }
    const body = $('calls-body');
    const now = [...body.children];
    if (now.length !== ordered.length || now.some((tr, i) => tr !== ordered[i])) body.replaceChildren(...ordered);
    $('calls-empty').hidden = list.length > 0;
  }

  function callRow(c) {
    const running = c.state === 'running';
    const dur = running && c.started ? Date.now() - new Date(c.started).getTime() : c.duration_ms;
    let outcome = running ? (c.waiting ? 'waiting for approval' : 'running') : (c.outcome || '');
    if (running && c.progress) {
      const p = c.progress;
      outcome += ' ' + (p.total ? Math.round(100 * p.progress / p.total) + '%' : (p.progress != null ? p.progress : '')) +
        (p.message ? ' ' + p.message : '');
    }
    const tr = el('tr', { class: 'clickable', 'data-seq': c.seq, 'data-state': c.state || '' },
      el('td', { class: 'mono' }, c.seq != null ? c.seq : ''),
      el('td', { class: 'mono' }, c.tool || ''),
      el('td', null, c.client || c.session || ''),
      el('td', null, when(c.started)),
      el('td', { class: 'dur', 'data-started': running ? c.started : null }, ms(dur)),
      el('td', { class: outcomeClass(running ? 'running' : outcome) }, outcome),
      el('td', null, renderArgs(c.arguments, 200)));
    tr.addEventListener('click', () => guard(showCall(c)));
    return tr;
  }

  async function showCall(c) {
    let full = c;
    if (c.id) {
      try {
        full = (await api('GET', '/api/calls/' + encodeURIComponent(c.id))).call || c;
      } catch (e) {
        if (e.status !== 404) throw e;
      }
    }
    const box = el('div', { class: 'detail' },
      el('h3', null, (full.tool || '') + ' #' + (full.seq != null ? full.seq : '')),
      el('p', { class: 'meta' }, 'client ' + (full.client || '—') + ' · session ' + (full.session || '—') +
        ' · started ' + when(full.started) + ' · ' + (full.state === 'running' ? 'running' : (full.outcome || '') + ' in ' + ms(full.duration_ms))),
      el('h4', null, 'arguments'), renderArgs(full.arguments),
      full.result ? el('h4', null, 'result') : null, renderContent(full.result),
      full.question ? el('h4', null, 'question') : null, full.question ? el('pre', null, valueText(full.question)) : null);
    const old = document.querySelector('#view-calls .detail');
    if (old) old.replaceWith(box); else $('view-calls').append(box);
  }

  // Running calls show their time so far, once a second.
  setInterval(() => {
    for (const td of document.querySelectorAll('td.dur[data-started]')) {
      const t = new Date(td.dataset.started).getTime();
      if (!isNaN(t)) td.textContent = ms(Date.now() - t);
    }
  }, 1000);

  // Approvals.

  let approvalsBusy = null;
  let approvalsAgain = false;

  // loadApprovals asks for the list at once, or once more after the
  // request under way when it is called during one: an answer that comes
  // while a list is on its way is not lost.
  function loadApprovals() {
    if (approvalsBusy) { approvalsAgain = true; return approvalsBusy; }
    approvalsBusy = (async () => {
      try {
        do {
          approvalsAgain = false;
          const r = await api('GET', '/api/approvals');
          approvals = r.approvals || [];
          renderApprovals();
        } while (approvalsAgain);
      } finally {
        approvalsBusy = null;
      }
    })();
    return approvalsBusy;
  }

  function renderApprovals() {
    const n = approvals.length;
    const badge = $('pending-count');
    badge.textContent = String(n);
    badge.hidden = n === 0;
    document.title = n ? '(' + n + ') lathe' : 'lathe';
    // Cards already shown stay as they are: a card redrawn under the
    // pointer would lose a click in progress and the reason being typed.
    // Only the cards of settled approvals go, and new ones come last (the
    // list is oldest first).
    const list = $('approvals-list');
    const want = new Set(approvals.map((a) => a.id));
    const shown = new Set();
    for (const card of [...list.children]) {
      if (want.has(card.dataset.approval)) shown.add(card.dataset.approval); else card.remove();
    }
    for (const a of approvals) if (!shown.has(a.id)) list.append(approvalCard(a));
    $('approvals-empty').hidden = n > 0;
  }

  // ownRendering tells whether the approval carries the tool's own
  // rendering of its arguments (one line of text for a person), rather
  // than the arguments again as JSON, which the list below already shows,
  // redacted as the audit log redacts them.
  function ownRendering(a) {
    if (!a.formatted) return false;
    try { const v = JSON.parse(a.formatted); return !(v && typeof v === 'object'); } catch (_) { return true; }
  }

  function approvalCard(a) {
    const reason = el('input', { type: 'text', placeholder: 'reason (sent back to the model on deny)', 'data-reason': a.id, size: 40 });
    const buttons = [];
    const answer = async (ans) => {
      for (const b of buttons) b.disabled = true;
      try {
        const body = { answer: ans, digest: a.digest };
        if (reason.value.trim()) body.reason = reason.value.trim();
        await api('POST', '/api/approvals/' + encodeURIComponent(a.id), body);
        flash('');
      } catch (e) {
        const why = { 404: 'The call has ended: nothing to answer.', 409: 'Someone answered it already.',
          400: 'The server refused the answer: ' + e.message };
        flash(why[e.status] || e.message);
        // The card stays while the approval waits: it may be answered again.
        for (const b of buttons) b.disabled = false;
      } finally {
        guard(loadApprovals());
      }
    };
    const button = (ans, label, cls) => {
      const b = el('button', { type: 'button', class: cls, 'data-answer': ans }, label);
      b.addEventListener('click', () => answer(ans));
      buttons.push(b);
      return b;
    };
    const rule = a.rule ? 'Asked by the rule at ' + a.rule + '.' : 'No rule matched: the tool\'s effects ask.';
    return el('div', { class: 'card', 'data-approval': a.id },
      el('h3', { class: 'mono' }, a.tool || ''),
      el('p', { class: 'meta' }, 'client ' + (a.client || '—') + ' · session ' + (a.session || '—') +
        ' · call #' + (a.seq != null ? a.seq : '') + ' · asked ' + when(a.asked) +
        (a.deadline ? ' · waits until ' + when(a.deadline) : '')),
      el('p', null, rule),
      a.reason ? el('p', { class: 'meta' }, a.reason) : null,
      a.operation ? el('p', null, 'It asks before an operation of the tool: ', el('code', null, a.operation)) : null,
      ownRendering(a) ? el('pre', { class: 'formatted' }, a.formatted) : null,
      renderArgs(a.arguments),
      el('p', { class: 'meta mono' }, a.digest || ''),
      el('div', { class: 'buttons' },
        button('once', 'Allow once', 'primary'),
        button('session', 'Allow for the session'),
        button('always', 'Always allow'),
        reason,
        button('deny', 'Deny', 'danger')));
  }

  // Audit.

  function auditParams() {
    const f = $('audit-form');
    const p = new URLSearchParams();
    for (const name of ['q', 'tool', 'outcome', 'session']) {
      const v = f.elements[name].value.trim();
      if (v) p.set(name, v);
    }
    for (const name of ['since', 'until']) {
      const v = f.elements[name].value;
      if (v) p.set(name, new Date(v).toISOString());
    }
    p.set('limit', '50');
    return p;
  }

  async function searchAudit(more) {
    const p = more ? new URLSearchParams(auditQuery) : auditParams();
    if (more) p.set('before', auditNext);
    else auditQuery = p.toString();
    const r = await api('GET', '/api/audit?' + p.toString());
    const rows = (r.records || []).map(auditRow);
    if (more) $('audit-body').append(...rows); else clear($('audit-body'), ...rows);
    auditNext = r.next || '';
    $('audit-more').hidden = !auditNext;
    $('audit-empty').hidden = $('audit-body').children.length > 0;
  }

  function auditRow(rec) {
    const tr = el('tr', { class: 'clickable', 'data-record': rec.id },
      el('td', null, when(rec.time)),
      el('td', { class: 'mono' }, rec.tool || ''),
      el('td', null, rec.session || ''),
      el('td', { class: outcomeClass(rec.outcome) }, rec.outcome || (rec.incomplete ? 'incomplete' : '')),
      el('td', null, ms(durationOf(rec))),
      el('td', null, renderArgs(rec.arguments, 200)));
    tr.addEventListener('click', () => guard(showRecord(rec.id)));
    return tr;
  }

  async function showRecord(id) {
    const rec = (await api('GET', '/api/audit/' + encodeURIComponent(id))).record || {};
    const fields = [['record', rec.id], ['call', rec.call_id], ['parent', rec.parent], ['time', when(rec.time)],
      ['tool', rec.tool], ['session', rec.session], ['server', rec.server], ['decision', rec.decision],
      ['decided by', rec.decided_by], ['reason', rec.reason], ['outcome', rec.outcome], ['status', rec.status],
      ['duration', ms(durationOf(rec))], ['argument bytes', rec.args_bytes], ['result bytes', rec.result_bytes],
      ['process', rec.pid]];
    const dl = el('dl', { class: 'args' });
    for (const [k, v] of fields) if (v != null && v !== '' && v !== 0) dl.append(el('dt', null, k), el('dd', null, String(v)));
    const box = clear($('audit-detail'), el('h3', null, 'Record ' + (rec.id != null ? rec.id : '')), dl,
      el('h4', null, 'arguments'), renderArgs(rec.arguments));
    const ops = rec.operations || [];
    if (ops.length) {
      box.append(el('h4', null, 'operations'), el('table', { class: 'list' },
        el('thead', null, el('tr', null, ...['kind', 'subject', 'approval', 'error', 'bytes'].map((h) => el('th', null, h)))),
        el('tbody', null, ...ops.map((o) => el('tr', null, el('td', null, o.kind || ''), el('td', { class: 'mono' }, o.subject || ''),
          el('td', null, (o.approval || '') + (o.decided_by ? ' (' + o.decided_by + ')' : '')),
          el('td', { class: o.error ? 'outcome-bad' : '' }, o.error || ''), el('td', null, o.bytes || ''))))));
    }
    if (rec.operations_dropped) box.append(el('p', { class: 'meta' }, rec.operations_dropped + ' more operations were not kept.'));
    box.hidden = false;
    box.scrollIntoView({ block: 'nearest' });
  }

  // Catalog.

  async function loadCatalog() {
    const [t, u] = await Promise.all([api('GET', '/api/tools'),
      api('GET', '/api/upstreams').catch((e) => (e.status === 404 ? { upstreams: [] } : Promise.reject(e)))]);
    const ups = u.upstreams || [];
    clear($('upstreams-body'), ...ups.map((s) => el('tr', null,
      el('td', { class: 'mono' }, s.name || ''),
      el('td', { class: s.state === 'running' ? 'outcome-ok' : 'outcome-bad' }, s.state || ''),
      el('td', null, Array.isArray(s.tools) ? s.tools.length : (s.tools != null ? s.tools : '')),
      el('td', { class: 'outcome-bad' }, s.error || ''))));
    $('upstreams-empty').hidden = ups.length > 0;
    clear($('tools-list'), ...(t.tools || []).map(toolEntry));
    filterCatalog();
  }

  function toolEntry(t) {
    const fx = t.effects || {};
    const pol = t.policy || {};
    const tags = [];
    for (const [k, label] of [['readOnly', 'read-only'], ['destructive', 'destructive'], ['idempotent', 'idempotent'], ['openWorld', 'open world']]) {
      if (fx[k]) tags.push(el('span', { class: 'tag' }, label));
    }
    return el('details', { class: 'tool', 'data-tool': t.name },
      el('summary', null, el('span', { class: 'tag ' + (pol.decision || '') }, pol.decision || '?'), ' ',
        el('strong', { class: 'mono' }, t.name || ''), ' ', el('span', { class: 'meta' }, t.summary || '')),
      el('p', null, t.description || ''),
      el('p', { class: 'meta' }, 'source ' + (t.source || '—') + ' · policy ' + (pol.decision || '?') +
        (pol.rule ? ' by ' + pol.rule : ' (no rule: from its effects)'), ' ', ...tags),
      el('h4', null, 'input schema'), el('pre', null, valueText(t.inputSchema || {})),
      t.outputSchema ? el('h4', null, 'output schema') : null, t.outputSchema ? el('pre', null, valueText(t.outputSchema)) : null);
  }

  function filterCatalog() {
    const q = $('catalog-filter').value.trim().toLowerCase();
    for (const d of $('tools-list').children) d.hidden = q !== '' && !(d.dataset.tool || '').toLowerCase().includes(q);
  }

  // Grants.

  async function loadGrants() {
    const r = await api('GET', '/api/grants');
    const gs = r.grants || [];
    clear($('grants-body'), ...gs.map((g) => {
      const b = el('button', { type: 'button', class: 'danger', 'data-revoke': g.tool }, 'Revoke');
      b.addEventListener('click', async () => {
        b.disabled = true;
        let path = '/api/grants/' + encodeURIComponent(g.tool);
        if (g.command) path += '?command=' + encodeURIComponent(g.command);
        try { await api('DELETE', path); flash(''); } catch (e) { flash(e.message); }
        guard(loadGrants());
      });
      return el('tr', null, el('td', { class: 'mono' }, g.tool || ''), el('td', { class: 'mono' }, g.command || 'any'),
        el('td', null, when(g.created)), el('td', null, b));
    }));
    $('grants-empty').hidden = gs.length > 0;
  }

  // Live updates.

  // The audit view repeats its last search when a call ends, unless the
  // person has paged back into older records.
  let auditTimer = null;
  function auditSoon() {
    if (auditTimer || view !== 'audit' || auditQuery === '' || $('audit-body').children.length > 50) return;
    auditTimer = setTimeout(() => {
      auditTimer = null;
      if (view !== 'audit') return;
      guard((async () => {
        const r = await api('GET', '/api/audit?' + auditQuery);
        clear($('audit-body'), ...(r.records || []).map(auditRow));
        auditNext = r.next || '';
        $('audit-more').hidden = !auditNext;
        $('audit-empty').hidden = $('audit-body').children.length > 0;
      })());
    }, 500);
  }

  let callsTimer = null;
  function callsSoon() {
    if (callsTimer) return;
    callsTimer = setTimeout(() => { callsTimer = null; if (view === 'calls') guard(loadCalls()); }, 250);
  }

  function onEvent(ev) {
    let e;
    try { e = JSON.parse(ev.data); } catch (_) { return; }
    const kind = e.kind || ev.type;
    switch (kind) {
      case 'approval_pending': case 'approval_settled': case 'approval_asked': case 'approval_answered':
        guard(loadApprovals());
        if (kind === 'approval_answered' && view === 'grants') guard(loadGrants());
        if (kind === 'approval_asked' || kind === 'approval_answered') {
          const c = calls.get('seq:' + e.seq);
          if (c) { c.waiting = kind === 'approval_asked'; if (view === 'calls') renderCalls(); }
        }
        break;
      case 'progress': {
        const c = calls.get('seq:' + e.seq);
        if (c && e.progress) { c.progress = e.progress; if (view === 'calls') renderCalls(); }
        break;
      }
      case 'tools_changed':
        if (view === 'catalog') guard(loadCatalog());
        break;
      case 'call_started': case 'call_finished': {
        // The row appears at once from the event; the list fills in the
        // client and the arguments the event does not carry.
        const k = e.seq != null ? 'seq:' + e.seq : 'id:' + e.call_id;
        const c = Object.assign({}, calls.get(k) || { seq: e.seq, id: e.call_id, tool: e.tool, session: e.session });
        if (kind === 'call_started') { c.state = 'running'; c.started = c.started || e.time; } else {
          c.state = 'finished'; c.outcome = e.outcome; c.duration_ms = e.duration_ms;
        }
        calls.set(k, c);
        if (view === 'calls') renderCalls();
        callsSoon();
        if (kind === 'call_finished') auditSoon();
        break;
      }
    }
  }

  const kinds = ['call_started', 'call_finished', 'approval_asked', 'approval_answered', 'approval_pending',
    'approval_settled', 'tools_changed', 'progress', 'operation'];

  function connect() {
    if (events) events.close();
    events = new EventSource('/api/events?csrf=' + encodeURIComponent(csrf || ''));
    for (const k of kinds) events.addEventListener(k, onEvent);
    events.addEventListener('message', onEvent);
    events.addEventListener('open', () => {
      $('live').textContent = 'live';
      $('live').classList.add('on');
      // What happened while the stream was down is read again.
      guard(loadApprovals());
      guard(loaders[view]());
    });
    events.addEventListener('error', () => {
      $('live').textContent = 'offline';
      $('live').classList.remove('on');
      if (events.readyState === EventSource.CLOSED) {
        // The browser gives up on an answer that is not a stream (a
        // session that ended): see whether the session holds, then retry.
        setTimeout(() => {
          if (csrf === null) return;
          api('GET', '/api/session').then(() => connect(), () => {});
        }, 3000);
      }
    });
  }

  // Session.

  function loggedIn(value) {
    csrf = value || '';
    try { sessionStorage.setItem(csrfKey, csrf); } catch (_) { /* the session lasts until a reload */ }
    $('login').hidden = true;
    $('nav').hidden = false;
    $('logout').hidden = false;
    flash('');
    connect();
    route();
    guard(loadApprovals());
  }

  function loggedOut(msg) {
    csrf = null;
    try { sessionStorage.removeItem(csrfKey); } catch (_) { /* nothing kept */ }
    if (events) { events.close(); events = null; }
    $('live').textContent = 'offline';
    $('live').classList.remove('on');
    $('nav').hidden = true;
    $('logout').hidden = true;
    for (const s of document.querySelectorAll('.view')) s.hidden = true;
    $('login').hidden = false;
    $('token').focus();
    flash(msg || '');
  }

  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = $('token');
    try {
      const r = await api('POST', '/api/login', { token: t.value });
      t.value = '';
      loggedIn(r.csrf);
    } catch (e) {
      flash(e.status === 401 ? 'That is not the token of this server.' : e.message);
    }
  });

  $('logout').addEventListener('click', async () => {
    try { await api('POST', '/api/logout', {}); } catch (_) { /* the page forgets the session either way */ }
    loggedOut('');
  });

  // Reload asks twice: it ends the calls running.
  $('reload').addEventListener('click', () => {
    $('reload').hidden = true;
    $('reload-confirm').hidden = false;
    $('reload-said').textContent = '';
  });
  $('reload-confirm').addEventListener('click', async () => {
    const b = $('reload-confirm');
    b.disabled = true;
    try {
      await api('POST', '/api/reload', {});
      $('reload-said').textContent = 'Reloaded at ' + new Date().toLocaleTimeString() + '.';
      flash('');
      guard(loadCatalog());
    } catch (e) {
      $('reload-said').textContent = '';
      flash((e.status === 409 ? 'Not reloaded: ' : 'Not reloaded (' + e.status + '): ') + e.message);
    } finally {
      b.disabled = false;
      b.hidden = true;
      $('reload').hidden = false;
    }
  });

  $('audit-form').addEventListener('submit', (ev) => { ev.preventDefault(); guard(searchAudit(false)); });
  $('audit-more').addEventListener('click', () => guard(searchAudit(true)));
  $('catalog-filter').addEventListener('input', filterCatalog);
  window.addEventListener('hashchange', () => { if (csrf !== null) route(); });

  (async () => {
    try {
      try { csrf = sessionStorage.getItem(csrfKey); } catch (_) { csrf = null; }
      const s = await api('GET', '/api/session');
      loggedIn(s.csrf);
    } catch (e) {
      if (e.status === 401) loggedOut('');
      else if (e.status === 404) flash('This server does not serve the HTTP API at /api/.');
      else flash(e.message);
    }
  })();
})();
