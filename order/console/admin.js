/* The console's "Manage an event" section (issue 32): pick an event from the list, change
 * it (PATCH), restock it, end its sale, remove it (deleted or archived), and read its admin
 * record. Loaded after app.js, whose helpers it uses ($, setText, api, errorText, fmt) and
 * whose sign-in it follows (adminToken, the seckill:signedin / seckill:signedout /
 * seckill:created events app.js dispatches). Like app.js: JSON.parse and textContent only,
 * no HTML built from data; the server checks every call, this page only helps. */
'use strict';

const LIST_PAGE = 100;   /* the list's largest page */
const LIST_PAGES = 10;   /* at most 1,000 events in the picker */
const AUDIT_PAGE = 5;

/* id -> {ev (the last answer for it), gone: '' | 'ended' | 'archived', paused}. The ended
 * events come from the admin's list of them (?state=ended); archived ones, which no list
 * shows, stay here while the page is open, so their record can still be read. `paused` is what this page did (no read answers it): a pause from elsewhere
 * shows in the record, not in the state. */
const known = new Map();
let pickedId = null;
let adminClockMs = 0;    /* server clock minus ours, from the last event answer's `now` */
let auditOffset = 0;

function manageMessage(ok, err) {
  setText('manage-result', ok || '');
  setText('manage-error', err || '');
}

function serverNow() { return Date.now() + adminClockMs; }

function stateOf(ev, gone, paused) {
  if (gone === 'archived') return 'archived';
  const now = serverNow();
  if (gone === 'ended' || Date.parse(ev.ends_at) <= now) return 'ended';
  return (Date.parse(ev.starts_at) > now ? 'upcoming' : 'on sale') + (paused ? ', paused' : '');
}

/* ---- the list to pick from -------------------------------------------------------- */

/* One list's pages into `known` (gone: what its events are). @returns false on an error
 * (shown). */
async function loadList(query, gone, listed) {
  for (let page = 0, offset = 0; page < LIST_PAGES && offset !== null; page++) {
    const r = await api('GET', '/api/v1/events?' + query + 'limit=' + LIST_PAGE + '&offset=' + offset, adminToken);
    if (r.status !== 200 || !r.body || !Array.isArray(r.body.events)) { manageMessage('', 'event list: ' + errorText(r)); return false; }
    for (const ev of r.body.events) {
      listed.add(ev.event_id);
      const k = known.get(ev.event_id);
      known.set(ev.event_id, { ev, gone, paused: gone ? false : (k ? k.paused : false) });
    }
    offset = r.body.next_offset;
  }
  return true;
}

/* The current and upcoming events, then the ended ones not archived (the admin list,
 * newest end first), so a sale that ended before this page opened can be picked too. */
async function loadEventList() {
  if (!adminToken) { manageMessage('', 'sign in first'); return; }
  const listed = new Set();
  if (!await loadList('', '', listed) || !await loadList('state=ended&', 'ended', listed)) return;
  for (const [id, k] of known) /* on neither list: removed by someone else, or too new */
    if (!listed.has(id) && !k.gone) k.gone = 'ended';
  renderPicker();
}

function renderPicker() {
  const sel = $('pick');
  sel.textContent = '';
  const none = document.createElement('option');
  none.value = '';
  none.textContent = known.size ? '(pick an event)' : '(no event)';
  sel.appendChild(none);
  for (const [id, k] of known) {
    const o = document.createElement('option');
    o.value = id;
    o.textContent = k.ev.name + ' (' + id + ')' + (k.gone ? ', ' + k.gone : '');
    sel.appendChild(o);
  }
  sel.value = pickedId && known.has(pickedId) ? pickedId : '';
}

/* ---- the picked event ------------------------------------------------------------- */

async function pickEvent(id) {
  manageMessage('', '');
  pickedId = id || null;
  if (!pickedId) { renderPicked(); return; }
  const r = await api('GET', '/api/v1/events/' + pickedId, adminToken);
  if (r.status === 404) {
    known.delete(pickedId);
    pickedId = null;
    renderPicker();
    renderPicked();
    manageMessage('', 'that event is gone (removed)');
    return;
  }
  if (r.status !== 200 || !r.body) { manageMessage('', errorText(r)); return; }
  if (typeof r.body.now === 'string') adminClockMs = Date.parse(r.body.now) - Date.now();
  const k = known.get(pickedId);
  known.set(pickedId, { ev: r.body, gone: k ? k.gone : '', paused: k ? k.paused : false });
  renderPicker();
  renderPicked();
  /* the other sections follow the pick: no id typed anywhere */
  $('watch-id').value = pickedId;
  $('buyer-event').value = pickedId;
  await loadAudit(0);
}

function limitsText(l) {
  if (!l || !Object.keys(l).length) return 'the configured defaults';
  return ['user_rate', 'ip_rate', 'event_rate'].filter((n) => l[n] !== undefined)
    .map((n) => n + ' ' + fmt(l[n])).join(', ');
}

function renderPicked() {
  const k = pickedId ? known.get(pickedId) : null;
  const ev = k && k.ev;
  setText('pk-id', ev ? ev.name + ' (' + pickedId + ')' : '-');
  setText('pk-state', ev ? stateOf(ev, k.gone, k.paused) : '-');
  setText('pk-stock', ev ? fmt(ev.stock_left) + ' left of ' + fmt(ev.stock_total) : '-');
  setText('pk-window', ev ? ev.starts_at + ' to ' + ev.ends_at : '-');
  setText('pk-limits', ev ? limitsText(ev.limits) : '-');
  const l = (ev && ev.limits) || {};
  $('ch-name').value = ev ? ev.name : '';
  $('ch-starts').value = ev ? ev.starts_at : '';
  $('ch-ends').value = ev ? ev.ends_at : '';
  $('ch-user-rate').value = l.user_rate !== undefined ? l.user_rate : '';
  $('ch-ip-rate').value = l.ip_rate !== undefined ? l.ip_rate : '';
  $('ch-event-rate').value = l.event_rate !== undefined ? l.event_rate : '';
  if (!ev) { $('audit-rows').textContent = ''; setText('audit-page', '-'); }
}

/* An act's answer (the event as it now is, without `now`) becomes the picked event; the
 * message comes last, once the record shows the act too. */
async function actDone(ev, gone, what, paused) {
  const k = known.get(pickedId);
  known.set(pickedId, { ev: Object.assign({}, k ? k.ev : {}, ev), gone: gone !== undefined ? gone : (k ? k.gone : ''),
    paused: paused !== undefined ? paused : (k ? k.paused : false) });
  renderPicker();
  renderPicked();
  manageMessage('', '');
  await loadAudit(0);
  setText('manage-result', what); /* a record that failed to load keeps its error shown */
}

function needPicked() {
  if (!adminToken) { manageMessage('', 'sign in first'); return false; }
  if (!pickedId) { manageMessage('', 'pick an event first'); return false; }
  return true;
}

/* ---- the acts --------------------------------------------------------------------- */

/* The PATCH body: only the fields that differ from the picked event. null when the form
 * is wrong (the reason shown). */
function changeBody(ev) {
  const body = {}, limits = {};
  const name = $('ch-name').value;
  if (name !== ev.name) body.name = name;
  for (const [field, input] of [['starts_at', 'ch-starts'], ['ends_at', 'ch-ends']]) {
    const v = $(input).value.trim(), t = Date.parse(v);
    if (Number.isNaN(t)) { manageMessage('', field + ' is not a time (RFC 3339, e.g. 2026-11-23T20:00:00Z)'); return null; }
    if (t !== Date.parse(ev[field])) body[field] = new Date(t).toISOString();
  }
  const was = ev.limits || {};
  for (const [level, input] of [['user_rate', 'ch-user-rate'], ['ip_rate', 'ch-ip-rate'], ['event_rate', 'ch-event-rate']]) {
    const v = $(input).value.trim();
    if (v === '') { if (was[level] !== undefined) limits[level] = null; continue; }
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) { manageMessage('', level + ' is a whole number of at least 1, or empty'); return null; }
    if (n !== was[level]) limits[level] = n;
  }
  if (Object.keys(limits).length) body.limits = limits;
  return body;
}

async function changePicked(e) {
  e.preventDefault();
  if (!needPicked()) return;
  const body = changeBody(known.get(pickedId).ev);
  if (!body) return;
  if (!Object.keys(body).length) { manageMessage('', 'nothing to change'); return; }
  const r = await api('PATCH', '/api/v1/events/' + pickedId, adminToken, body);
  if (r.status !== 200 || !r.body) { manageMessage('', errorText(r)); return; }
  if (!r.body.limits) r.body.limits = {}; /* every level back to its default */
  await actDone(r.body, undefined, 'changed: ' + Object.keys(body).join(', '));
}

async function restockPicked(e) {
  e.preventDefault();
  if (!needPicked()) return;
  const mode = $('st-mode').value, n = Number($('st-units').value);
  if (!Number.isInteger(n)) { manageMessage('', 'units is a whole number'); return; }
  const r = await api('POST', '/api/v1/events/' + pickedId + '/stock', adminToken, { [mode]: n });
  if (r.status !== 200 || !r.body) { manageMessage('', errorText(r)); return; }
  await actDone(r.body, undefined, 'restocked: ' + fmt(r.body.stock_left) + ' left of ' + fmt(r.body.stock_total));
}

async function endPicked() {
  if (!needPicked()) return;
  if (!confirm('End the sale of ' + known.get(pickedId).ev.name + ' now? It cannot be reopened.')) return;
  const r = await api('POST', '/api/v1/events/' + pickedId + '/end', adminToken);
  if (r.status !== 200 || !r.body) { manageMessage('', errorText(r)); return; }
  await actDone(r.body, 'ended', 'ended at ' + r.body.ends_at, false); /* an end clears a pause */
}

async function pausePicked(pause) {
  if (!needPicked()) return;
  const r = await api('POST', '/api/v1/events/' + pickedId + (pause ? '/pause' : '/resume'), adminToken);
  if (r.status !== 200 || !r.body) { manageMessage('', errorText(r)); return; }
  await actDone({}, undefined, r.body.paused ? 'paused: new orders get 503 paused' : 'resumed: orders are taken again',
    r.body.paused);
}

async function removePicked() {
  if (!needPicked()) return;
  if (!confirm('Remove ' + known.get(pickedId).ev.name + '? Deleted if it never took an order, archived if it did.')) return;
  const id = pickedId;
  const r = await api('DELETE', '/api/v1/events/' + id, adminToken);
  if (r.status !== 200 || !r.body) { manageMessage('', errorText(r)); return; }
  if (r.body.removed === 'archived') { /* its record stays readable: keep it picked */
    await actDone({}, 'archived', 'archived: out of the list, its orders and record kept');
    return;
  }
  known.delete(id);
  pickedId = null;
  renderPicker();
  renderPicked();
  manageMessage('deleted event ' + id, '');
}

/* ---- the admin record ------------------------------------------------------------- */

/* What an entry changed: the fields whose value differs between before and after (every
 * field of after when there is no before, e.g. a create). */
function auditWhat(before, after) {
  const parts = [];
  const keys = new Set(Object.keys(after || {}).concat(Object.keys(before || {})));
  for (const key of keys) {
    const a = after ? JSON.stringify(after[key]) : undefined, b = before ? JSON.stringify(before[key]) : undefined;
    if (!before) parts.push(key + ' ' + a);
    else if (a !== b) parts.push(key + ' ' + (b === undefined ? '-' : b) + ' \u2192 ' + (a === undefined ? '-' : a));
  }
  return parts.join('; ');
}

async function loadAudit(offset) {
  if (!pickedId) return;
  const id = pickedId;
  const r = await api('GET', '/api/v1/events/' + id + '/audit?offset=' + offset + '&limit=' + AUDIT_PAGE, adminToken);
  if (id !== pickedId) return;
  if (r.status !== 200 || !r.body || !Array.isArray(r.body.entries)) { manageMessage('', 'record: ' + errorText(r)); return; }
  auditOffset = offset;
  const rows = $('audit-rows');
  rows.textContent = '';
  for (const en of r.body.entries) {
    const tr = document.createElement('tr');
    for (const [text, cls] of [[en.at, ''], [en.actor, ''], [en.act, 'act'], [auditWhat(en.before, en.after), 'what']]) {
      const td = document.createElement('td');
      td.textContent = text;
      if (cls) td.className = cls;
      tr.appendChild(td);
    }
    rows.appendChild(tr);
  }
  const n = r.body.entries.length;
  setText('audit-page', n ? 'entries ' + (offset + 1) + ' to ' + (offset + n) : 'no entry');
  $('audit-prev').disabled = offset === 0;
  $('audit-next').disabled = r.body.next_offset === null;
}

/* ---- wiring ----------------------------------------------------------------------- */

(function initManage() {
  document.addEventListener('seckill:signedin', () => loadEventList());
  document.addEventListener('seckill:signedout', () => {
    known.clear();
    pickedId = null;
    renderPicker();
    renderPicked();
  });
  document.addEventListener('seckill:created', async (e) => {
    await loadEventList();
    await pickEvent(e.detail); /* the list may not show it yet (refreshed every second) */
  });
  $('pick').addEventListener('change', () => pickEvent($('pick').value));
  $('pick-refresh').addEventListener('click', async () => {
    await loadEventList();
    if (pickedId) await pickEvent(pickedId);
  });
  $('change-form').addEventListener('submit', changePicked);
  $('stock-form').addEventListener('submit', restockPicked);
  $('pause').addEventListener('click', () => pausePicked(true));
  $('resume').addEventListener('click', () => pausePicked(false));
  $('end-now').addEventListener('click', endPicked);
  $('remove').addEventListener('click', removePicked);
  $('audit-prev').addEventListener('click', () => loadAudit(Math.max(0, auditOffset - AUDIT_PAGE)));
  $('audit-next').addEventListener('click', () => loadAudit(auditOffset + AUDIT_PAGE));
})();
