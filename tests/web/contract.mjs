// The contract test: sends every documented call of docs/openapi.yaml, and each documented
// error, to a running seckill-order, and validates every answer's status, content type and
// body against the file. A documented (operation, status) that no call produced fails the
// test unless it is listed in UNREACHED with the reason it cannot be produced here, so the
// file cannot drift from the code in either direction.
//
// Environment: SECKILL_HTTP (the front), SECKILL_BIN_DIR (for `seckill-order token`),
// SECKILL_JWT_SECRET (read by that command).
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

const specFile = process.argv[2];
const base = process.env.SECKILL_HTTP;
const bin = process.env.SECKILL_BIN_DIR;
if (!specFile || !base || !bin) {
  console.error('usage: SECKILL_HTTP=... SECKILL_BIN_DIR=... node contract.mjs docs/openapi.yaml');
  process.exit(2);
}
const spec = parse(readFileSync(specFile, 'utf8'));

// (operationId status) pairs that need a broken Redis, Kafka or PostgreSQL, or an overload,
// to happen: the fault tests produce those situations; their bodies are the same Error.
const UNREACHED = new Map([
  ['createEvent 503', 'PostgreSQL or Redis down (fault tests)'],
  ['getEvent 503', 'PostgreSQL down, or its load budget spent (test_order_reads floods it)'],
  ['listEvents 503', 'PostgreSQL down with no list in memory yet'],
  ['pauseEvent 503', 'Redis down'],
  ['resumeEvent 503', 'Redis down'],
  ['changeEvent 503', 'PostgreSQL or Redis down'],
  ['endEvent 503', 'PostgreSQL or Redis down'],
  ['restockEvent 503', 'PostgreSQL or Redis down, or the gate lost'],
  ['getEventAudit 503', 'PostgreSQL down'],
  ['removeEvent 503', 'PostgreSQL or Redis down'],
  ['getOrder 503', 'PostgreSQL or Redis down'],
  ['readyz 503', 'Redis or Kafka down (fault tests)'],
  ['metrics 401', 'a peer off the host, or a wrong bearer with metrics.token set: this test runs on loopback with no token (test_order_http1, test_consumer_http test_metrics_guard)'],
  ['payOrder 503', 'PostgreSQL or Redis down'],
  ['cancelOrder 503', 'PostgreSQL or Redis down'],
  ['listOrders 503', 'Redis down, or the event list not loaded yet on this front (e2e_order_retry)'],
  ['getChallenge 503', 'Redis down, for an event this front has not seen yet'],
  ['getOrderPath 503', 'Redis down, for an event this front has not seen yet'],
  ['placeOrderByPath 403', 'a path kept past the end of its sale (test_order_challenge_http keeps one)'],
  ['placeOrderByPath 413', 'as placeOrder, the same check before the path is looked at'],
  ['placeOrderByPath 429', 'as placeOrder (the contract test makes the user level refuse on placeOrder)'],
  ['placeOrderByPath 503', 'Redis or Kafka down, as placeOrder'],
]);

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: 'spec', components: spec.components });
const deref = (o) => (o && o.$ref ? o.$ref.replace(/^#\//, '').split('/').reduce((x, k) => x[k], spec) : o);
const fixRefs = (s) => JSON.parse(JSON.stringify(s).replace(/"#\/components\//g, '"spec#/components/'));

// Path templates to regexes, for finding the operation of a concrete path.
const routes = Object.entries(spec.paths).map(([tpl, item]) => ({
  tpl, item, re: new RegExp('^' + tpl.replace(/\{[^}]+\}/g, '[^/]+') + '$'),
}));

const seen = new Set();
let passed = 0, failed = 0;
const fail = (what, why) => { failed++; console.log(`FAIL ${what}: ${why}`); };

async function call(what, method, path, { token, body, raw, expect, headers = {} } = {}) {
  const h = { ...headers };
  if (token) h.Authorization = 'Bearer ' + token;
  let payload;
  if (raw !== undefined) { payload = raw; h['Content-Type'] = 'application/json'; }
  else if (body !== undefined) { payload = JSON.stringify(body); h['Content-Type'] = 'application/json'; }
  const res = await fetch(base + path, { method, headers: h, body: payload });
  const text = await res.text();
  const route = routes.find((r) => r.re.test(path.split('?')[0]));
  // A wrong method's 405 is documented on the path's operation.
  const op = route && (route.item[method.toLowerCase()] ||
    (res.status === 405 ? Object.values(route.item).find((o) => o && o.responses) : undefined));
  if (!op) return fail(what, `${method} ${path} is not in the file`), null;
  const status = String(res.status);
  seen.add(`${op.operationId} ${status}`);
  if (res.status === 405) // a wrong method is every operation of the path's 405
    for (const o of Object.values(route.item)) if (o && o.operationId) seen.add(`${o.operationId} 405`);
  if (expect && res.status !== expect) return fail(what, `status ${status}, expected ${expect}: ${text.slice(0, 200)}`), null;
  const doc = deref(op.responses[status] || op.responses.default);
  if (!doc) return fail(what, `status ${status} is not documented for ${op.operationId}`), null;
  const ctype = (res.headers.get('content-type') || '').split(';')[0].trim();
  const media = doc.content && doc.content[ctype];
  if (doc.content && !media) return fail(what, `content type ${ctype} is not documented (${Object.keys(doc.content)})`), null;
  let json = null;
  if (ctype === 'application/json' && doc.content) { // a 304 has no body to read
    try { json = JSON.parse(text); } catch (e) { return fail(what, `body is not JSON: ${text.slice(0, 100)}`), null; }
  }
  if (media && media.schema) {
    const validate = ajv.compile(fixRefs(media.schema));
    const value = ctype === 'application/json' ? json : text;
    if (!validate(value)) return fail(what, `body ${text.slice(0, 200)} does not match: ${ajv.errorsText(validate.errors)}`), null;
  }
  for (const [name, h] of Object.entries(doc.headers || {})) {
    if ((h.required || (deref(h) || {}).required) && !res.headers.get(name)) return fail(what, `header ${name} missing`), null;
  }
  passed++;
  console.log(`ok   ${what}: ${method} ${path} -> ${status}`);
  return { status: res.status, json, headers: res.headers };
}

const token = (sub, admin) =>
  execFileSync(`${bin}/seckill-order`, ['token', '--sub', String(sub), ...(admin ? ['--admin'] : [])], { encoding: 'utf8' }).trim();

const stamp = Date.now() % 1000000000;
const uid = (n) => stamp * 100 + n; // users of this run only
const admin = token(uid(1), true);
const u = [2, 3, 4, 5, 6].map((n) => token(uid(n), false));
const iso = (ms) => new Date(ms).toISOString();
const now = Date.now();

// Probes
await call('liveness', 'GET', '/healthz', { expect: 200 });
await call('readiness', 'GET', '/readyz', { expect: 200 });
await call('metrics', 'GET', '/metrics', { expect: 200 });
await call('probe, wrong method', 'POST', '/healthz', { expect: 405 });
await call('readyz, wrong method', 'POST', '/readyz', { expect: 405 });
await call('metrics, wrong method', 'POST', '/metrics', { expect: 405 });

// Events
const ev = (name, stock, s, e) => ({ name, stock, starts_at: iso(s), ends_at: iso(e) });
const a = await call('create (admin)', 'POST', '/api/v1/events', { token: admin, body: ev('contract A', 2, now - 1000, now + 3600e3), expect: 201 });
const b = await call('create, not started', 'POST', '/api/v1/events', { token: admin, body: ev('contract B', 5, now + 3600e3, now + 7200e3), expect: 201 });
const c = await call('create, ended', 'POST', '/api/v1/events', { token: admin, body: ev('contract C', 5, now - 7200e3, now - 3600e3), expect: 201 });
await call('create, not admin', 'POST', '/api/v1/events', { token: u[0], body: ev('x', 1, now, now + 1000), expect: 403 });
await call('create, no token', 'POST', '/api/v1/events', { body: ev('x', 1, now, now + 1000), expect: 401 });
await call('create, bad body', 'POST', '/api/v1/events', { token: admin, body: { name: 'x', stock: -1 }, expect: 400 });
await call('create, body too large', 'POST', '/api/v1/events', { token: admin, raw: '{"name":"' + 'x'.repeat(5000) + '"}', expect: 413 });
await call('create, wrong method', 'PUT', '/api/v1/events', { token: admin, expect: 405 });
const A = a && a.json.event_id, B = b && b.json.event_id, C = c && c.json.event_id;
await call('read event', 'GET', `/api/v1/events/${A}`, { token: u[0], expect: 200 });
await call('read event, unknown', 'GET', '/api/v1/events/999999999', { token: u[0], expect: 404 });
await call('read event, bad id', 'GET', '/api/v1/events/01', { token: u[0], expect: 400 });
await call('read event, no token', 'GET', `/api/v1/events/${A}`, { expect: 401 });
await call('read event, wrong method', 'PUT', `/api/v1/events/${A}`, { token: u[0], expect: 405 });
const page = await call('read event again', 'GET', `/api/v1/events/${A}`, { token: u[0], expect: 200 });
const etag = page && page.headers.get('etag');
await call('read event, If-None-Match', 'GET', `/api/v1/events/${A}`, { token: u[0], headers: { 'If-None-Match': etag }, expect: 304 });
const list = await call('list events', 'GET', '/api/v1/events?limit=2', { token: u[0], expect: 200 });
if (list && !(list.json.events.length <= 2)) fail('list events', 'more than limit');
await call('list events, If-None-Match', 'GET', '/api/v1/events?limit=2', { token: u[0], headers: { 'If-None-Match': list && list.headers.get('etag') }, expect: 304 });
await call('list events, bad limit', 'GET', '/api/v1/events?limit=0', { token: u[0], expect: 400 });
await call('list events, no token', 'GET', '/api/v1/events', { expect: 401 });
const ended = await call('list ended events (admin)', 'GET', '/api/v1/events?state=ended&limit=100', { token: admin, expect: 200 });
if (ended && !ended.json.events.some((e) => e.event_id === C)) fail('list ended events (admin)', 'the ended event C is not on it');
if (ended && ended.json.events.some((e) => e.event_id === A || e.event_id === B)) fail('list ended events (admin)', 'a live event is on it');
await call('list ended events, page', 'GET', '/api/v1/events?state=ended&limit=1&offset=0', { token: admin, expect: 200 });
await call('list ended events, not admin', 'GET', '/api/v1/events?state=ended', { token: u[0], expect: 403 });
await call('list events, unknown state', 'GET', '/api/v1/events?state=over', { token: admin, expect: 400 });
await call('list ended events, bad limit', 'GET', '/api/v1/events?state=ended&limit=101', { token: admin, expect: 400 });

// Orders
const o1 = await call('buy', 'POST', `/api/v1/events/${A}/orders`, { token: u[0], expect: 202 });
const dup = await call('buy, duplicate', 'POST', `/api/v1/events/${A}/orders`, { token: u[0], expect: 409 });
if (dup && o1 && dup.json.order_id !== o1.json.order_id) fail('buy, duplicate', `names ${dup.json.order_id}, not ${o1.json.order_id}`);
const o2 = await call('buy, second buyer', 'POST', `/api/v1/events/${A}/orders`, { token: u[1], body: {}, expect: 202 });
await call('buy, sold out', 'POST', `/api/v1/events/${A}/orders`, { token: u[2], expect: 409 });
await call('buy, not started', 'POST', `/api/v1/events/${B}/orders`, { token: u[0], expect: 403 });
await call('buy, ended', 'POST', `/api/v1/events/${C}/orders`, { token: u[0], expect: 403 });
await call('buy, unknown event', 'POST', '/api/v1/events/999999999/orders', { token: u[0], expect: 404 });
await call('buy, bad id', 'POST', '/api/v1/events/abc/orders', { token: u[0], expect: 400 });
await call('buy, no token', 'POST', `/api/v1/events/${A}/orders`, { expect: 401 });
await call('buy, body not an object', 'POST', `/api/v1/events/${B}/orders`, { token: u[3], raw: '[1]', expect: 400 });
await call('buy, body too large', 'POST', `/api/v1/events/${B}/orders`, { token: u[3], raw: '{"x":"' + 'y'.repeat(5000) + '"}', expect: 413 });
await call('buy, wrong method', 'GET', `/api/v1/events/${A}/orders`, { token: u[0], expect: 405 });
// The per-user bucket: a burst of one user's orders on the event not yet started (403s
// until the bucket is empty) ends in 429.
let limited = false;
for (let i = 0; i < 50 && !limited; i++) {
  const r = await call('buy, burst of one user', 'POST', `/api/v1/events/${B}/orders`, { token: u[4] });
  limited = r !== null && r.status === 429;
}
if (!limited) fail('rate limit', 'no 429 in 50 orders of one user');
// Pausing B's sale (admin): its orders get 503 paused, then resume (issue 19).
await call('pause (admin)', 'POST', `/api/v1/events/${B}/pause`, { token: admin, expect: 200 });
await call('buy, paused', 'POST', `/api/v1/events/${B}/orders`, { token: u[3], expect: 503 });
await call('pause, not admin', 'POST', `/api/v1/events/${B}/pause`, { token: u[0], expect: 403 });
await call('pause, no token', 'POST', `/api/v1/events/${B}/pause`, { expect: 401 });
await call('pause, bad id', 'POST', '/api/v1/events/01/pause', { token: admin, expect: 400 });
await call('pause, unknown event', 'POST', '/api/v1/events/999999999/pause', { token: admin, expect: 404 });
await call('pause, wrong method', 'GET', `/api/v1/events/${B}/pause`, { token: admin, expect: 405 });
await call('resume (admin)', 'POST', `/api/v1/events/${B}/resume`, { token: admin, expect: 200 });
await call('resume, not admin', 'POST', `/api/v1/events/${B}/resume`, { token: u[0], expect: 403 });
await call('resume, no token', 'POST', `/api/v1/events/${B}/resume`, { expect: 401 });
await call('resume, bad id', 'POST', '/api/v1/events/01/resume', { token: admin, expect: 400 });
await call('resume, wrong method', 'GET', `/api/v1/events/${B}/resume`, { token: admin, expect: 405 });
await call('buy, resumed (not started again)', 'POST', `/api/v1/events/${B}/orders`, { token: u[3], expect: 403 });
// Changing and ending a live event (admin, issue 32), on an event of its own.
const d = await call('create D', 'POST', '/api/v1/events', { token: admin, body: ev('contract D', 3, now + 3600e3, now + 7200e3), expect: 201 });
const D = d && d.json.event_id;
const dc2 = await call('change (admin)', 'PATCH', `/api/v1/events/${D}`, { token: admin, body: { name: 'contract D2', limits: { user_rate: 7, ip_rate: null } }, expect: 200 });
if (dc2 && !(dc2.json.name === 'contract D2' && dc2.json.limits && dc2.json.limits.user_rate === 7 && !('ip_rate' in dc2.json.limits)))
  fail('change (admin)', `the answer is not the changed event: ${JSON.stringify(dc2.json)}`);
await call('change, unknown field', 'PATCH', `/api/v1/events/${D}`, { token: admin, body: { stock: 9 }, expect: 400 });
await call('change, bad id', 'PATCH', '/api/v1/events/01', { token: admin, body: { name: 'x' }, expect: 400 });
await call('change, not admin', 'PATCH', `/api/v1/events/${D}`, { token: u[0], body: { name: 'x' }, expect: 403 });
await call('change, no token', 'PATCH', `/api/v1/events/${D}`, { body: { name: 'x' }, expect: 401 });
await call('change, unknown event', 'PATCH', '/api/v1/events/999999999', { token: admin, body: { name: 'x' }, expect: 404 });
await call('change, end in the past', 'PATCH', `/api/v1/events/${D}`, { token: admin, body: { ends_at: iso(now - 1000) }, expect: 409 });
await call('change, body too large', 'PATCH', `/api/v1/events/${D}`, { token: admin, raw: '{"name":"' + 'x'.repeat(5000) + '"}', expect: 413 });
await call('remove, on sale', 'DELETE', `/api/v1/events/${D}`, { token: admin, expect: 409 });
await call('event, wrong method', 'PUT', `/api/v1/events/${D}`, { token: admin, expect: 405 });
const rs1 = await call('restock (admin)', 'POST', `/api/v1/events/${D}/stock`, { token: admin, body: { add: 5 }, expect: 200 });
if (rs1 && !(rs1.json.stock_total === 8 && rs1.json.stock_left === 8)) fail('restock (admin)', `3 + 5 is not 8: ${JSON.stringify(rs1.json)}`);
const rs2 = await call('restock, total', 'POST', `/api/v1/events/${D}/stock`, { token: admin, body: { total: 4 }, expect: 200 });
if (rs2 && !(rs2.json.stock_total === 4 && rs2.json.stock_left === 4)) fail('restock, total', `not 4: ${JSON.stringify(rs2.json)}`);
await call('restock, both add and total', 'POST', `/api/v1/events/${D}/stock`, { token: admin, body: { add: 1, total: 4 }, expect: 400 });
await call('restock, add 0', 'POST', `/api/v1/events/${D}/stock`, { token: admin, body: { add: 0 }, expect: 400 });
await call('restock, past the unsold', 'POST', `/api/v1/events/${D}/stock`, { token: admin, body: { add: -5 }, expect: 409 });
await call('restock, negative total', 'POST', `/api/v1/events/${D}/stock`, { token: admin, body: { total: -1 }, expect: 400 });
await call('restock, bad id', 'POST', '/api/v1/events/01/stock', { token: admin, body: { add: 1 }, expect: 400 });
await call('restock, not admin', 'POST', `/api/v1/events/${D}/stock`, { token: u[0], body: { add: 1 }, expect: 403 });
await call('restock, no token', 'POST', `/api/v1/events/${D}/stock`, { body: { add: 1 }, expect: 401 });
await call('restock, unknown event', 'POST', '/api/v1/events/999999999/stock', { token: admin, body: { add: 1 }, expect: 404 });
await call('restock, body too large', 'POST', `/api/v1/events/${D}/stock`, { token: admin, raw: '{"add":"' + 'x'.repeat(5000) + '"}', expect: 413 });
await call('restock, wrong method', 'GET', `/api/v1/events/${D}/stock`, { token: admin, expect: 405 });
const de = await call('end (admin)', 'POST', `/api/v1/events/${D}/end`, { token: admin, expect: 200 });
if (de && !(Date.parse(de.json.ends_at) <= Date.now() + 1000)) fail('end (admin)', `ends_at is not now: ${de.json.ends_at}`);
await call('end, ended', 'POST', `/api/v1/events/${D}/end`, { token: admin, expect: 409 });
await call('change, ended', 'PATCH', `/api/v1/events/${D}`, { token: admin, body: { name: 'late' }, expect: 409 });
await call('restock, ended', 'POST', `/api/v1/events/${D}/stock`, { token: admin, body: { add: 1 }, expect: 409 });
await call('end, not admin', 'POST', `/api/v1/events/${D}/end`, { token: u[0], expect: 403 });
await call('end, no token', 'POST', `/api/v1/events/${D}/end`, { expect: 401 });
await call('end, bad id', 'POST', '/api/v1/events/01/end', { token: admin, expect: 400 });
await call('end, unknown event', 'POST', '/api/v1/events/999999999/end', { token: admin, expect: 404 });
await call('end, wrong method', 'GET', `/api/v1/events/${D}/end`, { token: admin, expect: 405 });
const dr = await call('remove (admin)', 'DELETE', `/api/v1/events/${D}`, { token: admin, expect: 200 });
if (dr && dr.json.removed !== 'deleted') fail('remove (admin)', `an event without orders is ${dr.json.removed}`);
await call('read event, deleted', 'GET', `/api/v1/events/${D}`, { token: admin, expect: 404 });
await call('restock, deleted', 'POST', `/api/v1/events/${D}/stock`, { token: admin, body: { add: 1 }, expect: 404 });
await call('remove, deleted', 'DELETE', `/api/v1/events/${D}`, { token: admin, expect: 404 });
await call('remove, not admin', 'DELETE', `/api/v1/events/${D}`, { token: u[0], expect: 403 });
await call('remove, no token', 'DELETE', `/api/v1/events/${D}`, { expect: 401 });
await call('remove, bad id', 'DELETE', '/api/v1/events/01', { token: admin, expect: 400 });
await call('remove, unknown event', 'DELETE', '/api/v1/events/999999999', { token: admin, expect: 404 });
const rec = await call('audit (admin)', 'GET', `/api/v1/events/${D}/audit?limit=100`, { token: admin, expect: 200 });
const acts = rec ? rec.json.entries.map((e) => e.act).join(' ') : '';
if (acts !== 'create change restock restock end delete') fail('audit', `acts recorded: ${acts}`);
await call('audit, a page', 'GET', `/api/v1/events/${D}/audit?offset=1&limit=2`, { token: admin, expect: 200 });
await call('audit, bad page', 'GET', `/api/v1/events/${D}/audit?limit=0`, { token: admin, expect: 400 });
await call('audit, not admin', 'GET', `/api/v1/events/${D}/audit`, { token: u[0], expect: 403 });
await call('audit, no token', 'GET', `/api/v1/events/${D}/audit`, { expect: 401 });
await call('audit, an id nobody acted on', 'GET', '/api/v1/events/999999999/audit', { token: admin, expect: 200 });
await call('audit, wrong method', 'POST', `/api/v1/events/${D}/audit`, { token: admin, expect: 405 });
const O = o1 && o1.json.order_id;
await call('read order (buyer)', 'GET', `/api/v1/orders/${O}`, { token: u[0], expect: 200 });
await call('read order (admin)', 'GET', `/api/v1/orders/${O}`, { token: admin, expect: 200 });
await call('read order, another user', 'GET', `/api/v1/orders/${O}`, { token: u[1], expect: 403 });
await call('read order, unknown', 'GET', '/api/v1/orders/999999999', { token: u[0], expect: 404 });
await call('read order, bad id', 'GET', '/api/v1/orders/9223372036854775808', { token: u[0], expect: 400 });
await call('read order, no token', 'GET', `/api/v1/orders/${O}`, { expect: 401 });
await call('read order, wrong method', 'POST', `/api/v1/orders/${O}`, { token: u[0], expect: 405 });

// A buyer's orders, and Idempotency-Key (issue 31).
const mine = await call('list orders, one event', 'GET', `/api/v1/orders?event_id=${A}`, { token: u[0], expect: 200 });
if (mine && !(mine.json.orders.length === 1 && mine.json.orders[0].order_id === O)) fail('list orders', `not [${O}]: ${JSON.stringify(mine.json)}`);
await call('list orders, all', 'GET', '/api/v1/orders?limit=5', { token: u[0], expect: 200 });
await call('list orders, bad limit', 'GET', '/api/v1/orders?limit=0', { token: u[0], expect: 400 });
await call('list orders, no token', 'GET', '/api/v1/orders', { expect: 401 });
await call('list orders, wrong method', 'POST', '/api/v1/orders', { token: u[0], expect: 405 });
const ik = { 'Idempotency-Key': `contract-${stamp}` };
const uk = token(uid(7), false); // a user of its own: its bucket holds every keyed call
await call('buy, keyed', 'POST', `/api/v1/events/${B}/orders`, { token: uk, headers: ik, expect: 403 });
const k2 = await call('buy, keyed again', 'POST', `/api/v1/events/${B}/orders`, { token: uk, headers: ik, expect: 403 });
if (k2 && k2.headers.get('idempotent-replayed') !== 'true') fail('buy, keyed again', 'not replayed');
await call('buy, key reused', 'POST', `/api/v1/events/${C}/orders`, { token: uk, headers: ik, expect: 422 });
await call('buy, bad quantity', 'POST', `/api/v1/events/${A}/orders`, { token: uk, body: { quantity: 0 }, expect: 400 });
await call('buy, bad key', 'POST', `/api/v1/events/${A}/orders`, { token: uk, headers: { 'Idempotency-Key': 'k'.repeat(256) }, expect: 400 });
// Several units (issue 31): the event M sells 4 units, at most 3 per user.
const m = await call('create, per_user_limit 3', 'POST', '/api/v1/events', { token: admin,
  body: { ...ev('contract M', 4, now - 1000, now + 3600e3), per_user_limit: 3 }, expect: 201 });
await call('create, per_user_limit over 100', 'POST', '/api/v1/events', { token: admin,
  body: { ...ev('x', 1, now, now + 1000), per_user_limit: 101 }, expect: 400 });
const M = m && m.json.event_id;
await call('buy 2 units', 'POST', `/api/v1/events/${M}/orders`, { token: u[3], body: { quantity: 2 }, expect: 202 });
const lr = await call('buy 2 more, limit reached', 'POST', `/api/v1/events/${M}/orders`, { token: u[3], body: { quantity: 2 }, expect: 409 });
if (lr && !(lr.json.error === 'limit_reached' && lr.json.held === 2)) fail('buy 2 more, limit reached', JSON.stringify(lr.json));
// A user of its own: u[4]'s bucket was emptied by the burst above, and whether it has
// refilled by now depends on how fast the calls between ran (a 429 instead of the answer).
const uu = token(uid(8), false);
await call('buy over the limit', 'POST', `/api/v1/events/${M}/orders`, { token: uu, body: { quantity: 4 }, expect: 400 });
const fl = await call('buy 3, fewer left', 'POST', `/api/v1/events/${M}/orders`, { token: uu, body: { quantity: 3 }, expect: 409 });
if (fl && !(fl.json.error === 'sold_out' && fl.json.left === 2)) fail('buy 3, fewer left', JSON.stringify(fl.json));
await call('buy quantity not an integer', 'POST', `/api/v1/events/${M}/orders`, { token: uu, body: { quantity: 1.5 }, expect: 400 });
// A proof-of-work challenge before the order (issue 31): the event DC has one.
const dc = await call('create, with a challenge', 'POST', '/api/v1/events', { token: admin,
  body: { ...ev('contract DC', 3, now - 1000, now + 3600e3), challenge: { kind: 'pow', difficulty: 8 } }, expect: 201 });
await call('create, unknown challenge kind', 'POST', '/api/v1/events', { token: admin,
  body: { ...ev('x', 1, now, now + 1000), challenge: { kind: 'captcha', difficulty: 8 } }, expect: 400 });
await call('create, challenge too hard', 'POST', '/api/v1/events', { token: admin,
  body: { ...ev('x', 1, now, now + 1000), challenge: { kind: 'pow', difficulty: 33 } }, expect: 400 });
const DC = dc && dc.json.event_id;
const dPage = await call('read event with a challenge', 'GET', `/api/v1/events/${DC}`, { token: u[0], expect: 200 });
if (dPage && !(dPage.json.challenge && dPage.json.challenge.difficulty === 8)) fail('read event with a challenge', JSON.stringify(dPage.json));
const solve = (challenge, bits) => { // common/sk_pow.h's rule
  for (let n = 0; ; n++) {
    const h = createHash('sha256').update(`${challenge}.${n}`).digest();
    let z = 0;
    for (const byte of h) { if (byte === 0) { z += 8; continue; } z += Math.clz32(byte) - 24; break; }
    if (z >= bits) return `${challenge}.${n}`;
  }
};
const ch = await call('challenge', 'GET', `/api/v1/events/${DC}/challenge`, { token: u[0], expect: 200 });
await call('buy, challenge missing', 'POST', `/api/v1/events/${DC}/orders`, { token: u[0], expect: 403 });
await call('buy, challenge of the wrong shape', 'POST', `/api/v1/events/${DC}/orders`, { token: u[0], headers: { 'Seckill-Challenge': 'abc' }, expect: 400 });
const sol = ch && solve(ch.json.challenge, ch.json.difficulty);
await call('buy, another user\'s solution', 'POST', `/api/v1/events/${DC}/orders`, { token: u[1], headers: { 'Seckill-Challenge': sol }, expect: 403 });
await call('buy, solved', 'POST', `/api/v1/events/${DC}/orders`, { token: u[0], headers: { 'Seckill-Challenge': sol }, expect: 202 });
await call('buy, solution used again', 'POST', `/api/v1/events/${DC}/orders`, { token: u[0], headers: { 'Seckill-Challenge': sol }, expect: 409 });
await call('challenge, event without one', 'GET', `/api/v1/events/${A}/challenge`, { token: u[0], expect: 404 });
await call('challenge, bad id', 'GET', '/api/v1/events/01/challenge', { token: u[0], expect: 400 });
await call('challenge, no token', 'GET', `/api/v1/events/${DC}/challenge`, { expect: 401 });
await call('challenge, wrong method', 'POST', `/api/v1/events/${DC}/challenge`, { token: u[0], expect: 405 });
// A hidden order path per user (issue 31): E has one; F has one but has not started.
const e = await call('create, with a hidden path', 'POST', '/api/v1/events', { token: admin,
  body: { ...ev('contract E', 3, now - 1000, now + 3600e3), challenge: { kind: 'path' } }, expect: 201 });
const f = await call('create, hidden path, not started', 'POST', '/api/v1/events', { token: admin,
  body: { ...ev('contract F', 3, now + 3600e3, now + 7200e3), challenge: { kind: 'path' } }, expect: 201 });
const E = e && e.json.event_id, F = f && f.json.event_id;
await call('order path, not started', 'GET', `/api/v1/events/${F}/order-path`, { token: u[0], expect: 403 });
const op = await call('order path', 'GET', `/api/v1/events/${E}/order-path`, { token: u[0], expect: 200 });
await call('order path, event without one', 'GET', `/api/v1/events/${A}/order-path`, { token: u[0], expect: 404 });
await call('order path, bad id', 'GET', '/api/v1/events/01/order-path', { token: u[0], expect: 400 });
await call('order path, no token', 'GET', `/api/v1/events/${E}/order-path`, { expect: 401 });
await call('order path, wrong method', 'POST', `/api/v1/events/${E}/order-path`, { token: u[0], expect: 405 });
await call('buy, hidden path event by the plain path', 'POST', `/api/v1/events/${E}/orders`, { token: u[0], expect: 404 });
await call('buy by a guessed path', 'POST', `/api/v1/events/${E}/orders/guessed`, { token: u[0], expect: 404 });
await call('buy by another user\'s path', 'POST', op ? op.json.path : '/x', { token: u[1], expect: 404 });
await call('buy by the path, no token', 'POST', op ? op.json.path : '/x', { expect: 401 });
await call('buy by the path, bad id', 'POST', '/api/v1/events/01/orders/x', { token: u[0], expect: 400 });
await call('buy by the path, wrong method', 'GET', op ? op.json.path : '/x', { token: u[0], expect: 405 });
await call('buy by the path', 'POST', op ? op.json.path : '/x', { token: u[0], expect: 202 });
await call('buy by the path again', 'POST', op ? op.json.path : '/x', { token: u[0], expect: 409 });

// After the 202 (issue 22): pay and cancel, once the consumer wrote the orders.
const O2 = o2 && o2.json.order_id;
const written = async (id, tok) => {
  for (let i = 0; i < 600; i++) {
    const res = await fetch(`${base}/api/v1/orders/${id}`, { headers: { Authorization: 'Bearer ' + tok } });
    const j = await res.json().catch(() => ({}));
    if (j.status && j.status !== 'queued') return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
};
if (!(await written(O, u[0])) || !(await written(O2, u[1]))) fail('pay', 'the orders were not written within 30 s');
await call('pay', 'POST', `/api/v1/orders/${O}/pay`, { token: u[0], body: { payment_ref: 'c-1' }, expect: 200 });
await call('pay again', 'POST', `/api/v1/orders/${O}/pay`, { token: u[0], body: { payment_ref: 'c-1' }, headers: { 'Idempotency-Key': `pay-${stamp}` }, expect: 200 });
await call('pay, key reused', 'POST', `/api/v1/orders/${O}/pay`, { token: u[0], body: { payment_ref: 'c-9' }, headers: { 'Idempotency-Key': `pay-${stamp}` }, expect: 422 });
await call('pay, another reference', 'POST', `/api/v1/orders/${O}/pay`, { token: u[0], body: { payment_ref: 'c-2' }, expect: 409 });
await call('pay, another user', 'POST', `/api/v1/orders/${O}/pay`, { token: u[1], body: { payment_ref: 'c-1' }, expect: 403 });
await call('pay, bad body', 'POST', `/api/v1/orders/${O}/pay`, { token: u[0], body: { payment_ref: '' }, expect: 400 });
await call('pay, unknown', 'POST', '/api/v1/orders/999999999/pay', { token: u[0], body: { payment_ref: 'x' }, expect: 404 });
await call('pay, no token', 'POST', `/api/v1/orders/${O}/pay`, { body: { payment_ref: 'x' }, expect: 401 });
await call('pay, wrong method', 'GET', `/api/v1/orders/${O}/pay`, { token: u[0], expect: 405 });
await call('pay, body too large', 'POST', `/api/v1/orders/${O}/pay`, { token: u[0], raw: '{"payment_ref":"' + 'y'.repeat(5000) + '"}', expect: 413 });
await call('read order, paid', 'GET', `/api/v1/orders/${O}`, { token: u[0], expect: 200 });
await call('cancel', 'POST', `/api/v1/orders/${O2}/cancel`, { token: u[1], expect: 200 });
await call('cancel again', 'POST', `/api/v1/orders/${O2}/cancel`, { token: u[1], headers: { 'Idempotency-Key': `cancel-${stamp}` }, expect: 200 });
await call('cancel, key reused', 'POST', `/api/v1/orders/${O}/cancel`, { token: u[1], headers: { 'Idempotency-Key': `cancel-${stamp}` }, expect: 422 });
await call('pay, cancelled', 'POST', `/api/v1/orders/${O2}/pay`, { token: u[1], body: { payment_ref: 'late' }, expect: 409 });
await call('cancel, paid', 'POST', `/api/v1/orders/${O}/cancel`, { token: u[0], expect: 409 });
await call('cancel, another user', 'POST', `/api/v1/orders/${O}/cancel`, { token: u[1], expect: 403 });
await call('cancel, body not an object', 'POST', `/api/v1/orders/${O2}/cancel`, { token: u[1], raw: '[1]', expect: 400 });
await call('cancel, unknown', 'POST', '/api/v1/orders/999999999/cancel', { token: u[1], expect: 404 });
await call('cancel, no token', 'POST', `/api/v1/orders/${O2}/cancel`, { expect: 401 });
await call('cancel, wrong method', 'GET', `/api/v1/orders/${O2}/cancel`, { token: u[1], expect: 405 });
await call('cancel, body too large', 'POST', `/api/v1/orders/${O2}/cancel`, { token: u[1], raw: '{"x":"' + 'y'.repeat(5000) + '"}', expect: 413 });

// Archive (issue 32): A took orders, so its removal, once ended, archives it; its orders
// and record stay readable.
await call('remove A, on sale', 'DELETE', `/api/v1/events/${A}`, { token: admin, expect: 409 });
await call('end A', 'POST', `/api/v1/events/${A}/end`, { token: admin, expect: 200 });
const ar = await call('remove A: archived', 'DELETE', `/api/v1/events/${A}`, { token: admin, expect: 200 });
if (ar && ar.json.removed !== 'archived') fail('remove A: archived', `an event with orders is ${ar.json.removed}`);
await call('archive again', 'DELETE', `/api/v1/events/${A}`, { token: admin, expect: 409 });
await call('read order, archived event', 'GET', `/api/v1/orders/${O}`, { token: u[0], expect: 200 });
const arec = await call('audit, archived event', 'GET', `/api/v1/events/${A}/audit`, { token: admin, expect: 200 });
const aacts = arec ? arec.json.entries.map((e) => e.act).join(' ') : '';
if (aacts !== 'create end archive') fail('audit, archived event', `acts recorded: ${aacts}`);
if (arec && !arec.json.entries.every((e) => e.actor === String(uid(1)))) fail('audit, archived event', 'an entry names another actor');

// Coverage: every documented answer was produced, or is listed with its reason.
for (const { item } of routes) {
  for (const [method, op] of Object.entries(item)) {
    if (!op || !op.responses) continue;
    for (const status of Object.keys(op.responses)) {
      const key = `${op.operationId} ${status}`;
      if (seen.has(key)) continue;
      if (UNREACHED.has(key)) { console.log(`skip ${key}: ${UNREACHED.get(key)}`); continue; }
      fail('coverage', `${method.toUpperCase()} ${key} is documented but no call produced it`);
    }
  }
}
for (const key of UNREACHED.keys()) if (seen.has(key)) fail('coverage', `${key} is listed as unreached but happened`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
