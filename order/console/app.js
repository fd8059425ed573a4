/* The sale console of seckill-order (GET /console).
 *
 * One page for the people who run a sale: sign in with an admin token, create an event,
 * watch it live, and try the buyer's flow by hand. admin.js (loaded after this file) holds
 * the "Manage an event" section: pick, change, restock, end, remove, the admin record. It calls only the public API and
 * /metrics of its own origin (the tokens go nowhere else), plus the consumer's /metrics
 * at the URL given, without credentials. Answers are read with JSON.parse and shown with
 * textContent: no HTML is ever built from data. The tokens live in this page's memory
 * only (no storage), so a reload signs out. */
'use strict';

const $ = (id) => document.getElementById(id);
const REFRESH_MS = 500;
const POINTS = 120; /* one minute of history at 500 ms */

let adminToken = null;

/* ---- small helpers ---------------------------------------------------------------- */

function setText(id, text) { $(id).textContent = text; }

/* The claims of a JWT, for display only: the server verifies every call. */
function claimsOf(token) {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)));
  } catch (e) {
    return null;
  }
}

/* A call to our own origin. Returns {status, body (parsed JSON or null), headers}. */
async function api(method, path, token, body, extraHeaders) {
  const headers = Object.assign({}, extraHeaders || {});
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method, headers, credentials: 'same-origin', cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
  return { status: res.status, body: json, headers: res.headers };
}

function errorText(r) {
  if (r.body && typeof r.body.error === 'string')
    return r.status + ' ' + r.body.error + (r.body.message ? ': ' + r.body.message : '');
  return 'HTTP ' + r.status;
}

/* Prometheus text -> [{name, labels, value}]. */
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) {
      for (const kv of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[kv[1]] = kv[2];
    }
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

function sum(samples, name, want) {
  let s = 0;
  for (const x of samples) {
    if (x.name !== name) continue;
    let ok = true;
    for (const k in want) if (x.labels[k] !== want[k]) { ok = false; break; }
    if (ok) s += x.value;
  }
  return s;
}

/* Cumulative buckets of one route's latency histogram: [[le, count]...] sorted. */
function buckets(samples, route) {
  const b = [];
  for (const x of samples) {
    if (x.name === 'seckill_order_request_seconds_bucket' && x.labels.route === route)
      b.push([x.labels.le === '+Inf' ? Infinity : Number(x.labels.le), x.value]);
  }
  return b.sort((p, q) => p[0] - q[0]);
}

/* A quantile of the requests between two snapshots of cumulative buckets, in ms. */
function quantileMs(prev, cur, q) {
  if (!prev || prev.length !== cur.length || !cur.length) return null;
  const total = cur[cur.length - 1][1] - prev[prev.length - 1][1];
  if (total <= 0) return null;
  const rank = q * total;
  for (let i = 0; i < cur.length; i++) {
    if (cur[i][1] - prev[i][1] >= rank) {
      const le = cur[i][0];
      return le === Infinity ? (i > 0 ? cur[i - 1][0] * 1000 : null) : le * 1000;
    }
  }
  return null;
}

function fmt(n, digits) {
  if (n === null || n === undefined || Number.isNaN(n)) return '-';
  return Number(n).toLocaleString('en-US', { maximumFractionDigits: digits || 0 });
}

/* A small time series on a canvas: one or two lines, scaled to their maximum. */
function draw(id, series, colors) {
  const c = $(id), g = c.getContext('2d');
  g.clearRect(0, 0, c.width, c.height);
  let max = 1;
  for (const s of series) for (const v of s) if (v !== null && v > max) max = v;
  series.forEach((s, k) => {
    g.strokeStyle = colors[k];
    g.lineWidth = 1.5;
    g.beginPath();
    let started = false;
    s.forEach((v, i) => {
      if (v === null) return;
      const x = ((POINTS - s.length + i) / (POINTS - 1)) * (c.width - 2) + 1; /* newest at the right */
      const y = c.height - 2 - (v / max) * (c.height - 6);
      if (started) g.lineTo(x, y); else { g.moveTo(x, y); started = true; }
    });
    g.stroke();
  });
}

function push(arr, v) { arr.push(v); if (arr.length > POINTS) arr.shift(); }

/* ---- sign in ---------------------------------------------------------------------- */

async function signIn(ev) {
  ev.preventDefault();
  const token = $('token').value.trim();
  setText('signin-error', '');
  const claims = claimsOf(token);
  if (!claims) { setText('signin-error', 'not a JWT'); return; }
  /* The server checks the signature: any call that needs a token tells. An unknown
   * event answers 404 to a good token and 401 to a bad one. */
  const r = await api('GET', '/api/v1/events/1', token);
  if (r.status === 401) { setText('signin-error', errorText(r)); return; }
  if (claims.role !== 'admin') { setText('signin-error', 'this token has no admin role'); return; }
  adminToken = token;
  $('token').value = '';
  setText('who', 'signed in as user ' + String(claims.sub) + ' (admin)');
  document.dispatchEvent(new Event('seckill:signedin')); /* admin.js loads the event list */
}

function signOut() {
  adminToken = null;
  setText('who', 'not signed in');
  document.dispatchEvent(new Event('seckill:signedout'));
}

/* ---- create an event -------------------------------------------------------------- */

async function createEvent(ev) {
  ev.preventDefault();
  setText('create-error', '');
  setText('create-result', '');
  if (!adminToken) { setText('create-error', 'sign in with an admin token first'); return; }
  const now = Date.now() + clockOffsetMs;
  const starts = now + Number($('ev-starts').value) * 1000;
  const body = {
    name: $('ev-name').value,
    stock: Number($('ev-stock').value),
    starts_at: new Date(starts).toISOString(),
    ends_at: new Date(starts + Number($('ev-lasts').value) * 1000).toISOString(),
  };
  const r = await api('POST', '/api/v1/events', adminToken, body);
  if (r.status !== 201 || !r.body || typeof r.body.event_id !== 'string') {
    setText('create-error', errorText(r));
    return;
  }
  setText('create-result', 'created event ' + r.body.event_id);
  $('watch-id').value = r.body.event_id;
  $('buyer-event').value = r.body.event_id;
  document.dispatchEvent(new CustomEvent('seckill:created', { detail: r.body.event_id })); /* admin.js picks it */
}

/* ---- the live view ---------------------------------------------------------------- */

let watch = null;

function startWatch(ev) {
  ev.preventDefault();
  setText('live-error', '');
  const id = $('watch-id').value.trim();
  if (!/^[1-9][0-9]{0,18}$/.test(id)) { setText('live-error', 'an event id is a decimal number'); return; }
  if (!adminToken) { setText('live-error', 'sign in first'); return; }
  if (watch) clearInterval(watch.timer);
  watch = {
    id, prev: null, busy: false,
    s: { stock: [], r202: [], r409: [], rerr: [], p50: [], p99: [], kafka: [], rows: [], lag: [] },
  };
  tick();
  watch.timer = setInterval(tick, REFRESH_MS);
}

async function consumerSnapshot() {
  const url = $('consumer-url').value.trim();
  if (!url) return null;
  try {
    const res = await fetch(url, { credentials: 'omit', cache: 'no-store' });
    if (!res.ok) return null;
    const m = parseMetrics(await res.text());
    return {
      rows: sum(m, 'seckill_consumer_orders_created_total', {}) + sum(m, 'seckill_consumer_orders_rejected_total', {}),
      lag: sum(m, 'seckill_consumer_lag', {}),
    };
  } catch (e) {
    return null;
  }
}

async function tick() {
  const w = watch;
  if (!w || w.busy) return;
  w.busy = true;
  try {
    const t = performance.now();
    const [evr, mres, cons] = await Promise.all([
      api('GET', '/api/v1/events/' + w.id, adminToken),
      fetch('/metrics', { credentials: 'same-origin', cache: 'no-store' }),
      consumerSnapshot(),
    ]);
    if (w !== watch) return;
    if (evr.status !== 200 || !evr.body) { setText('live-error', errorText(evr)); return; }
    setText('live-error', '');
    const m = parseMetrics(await mres.text());
    const cur = {
      t,
      c202: sum(m, 'seckill_order_requests_total', { route: 'order_create', status: '202' }),
      c409: sum(m, 'seckill_order_requests_total', { route: 'order_create', status: '409' }),
      cerr: sum(m, 'seckill_order_requests_total', { route: 'order_create', status: '429' }) +
            sum(m, 'seckill_order_requests_total', { route: 'order_create', status: '503' }),
      hist: buckets(m, 'order_create'),
      kafka: sum(m, 'seckill_order_kafka_inflight', {}),
      rows: cons ? cons.rows : null,
      lag: cons ? cons.lag : null,
    };
    const p = w.prev, dt = p ? (cur.t - p.t) / 1000 : 0;
    const rate = (a, b) => (p && dt > 0 && a !== null && b !== null ? Math.max(0, (a - b) / dt) : null);
    const r202 = rate(cur.c202, p && p.c202), r409 = rate(cur.c409, p && p.c409);
    const rerr = rate(cur.cerr, p && p.cerr), rrows = rate(cur.rows, p && p.rows);
    const p50 = quantileMs(p && p.hist, cur.hist, 0.5), p99 = quantileMs(p && p.hist, cur.hist, 0.99);
    w.prev = cur;

    setText('stock-left', fmt(evr.body.stock_left));
    setText('accepted-total', fmt(cur.c202));
    setText('rate-202', fmt(r202) + ' /s');
    setText('rate-409', fmt(r409));
    setText('rate-err', fmt(rerr));
    setText('latency', fmt(p50, 2) + ' / ' + fmt(p99, 2));
    setText('kafka-wait', fmt(cur.kafka));
    setText('rows-total', cons ? fmt(cur.rows) : 'consumer unreachable');
    setText('rate-rows', fmt(rrows) + ' /s');
    setText('lag', cons ? fmt(cur.lag) : '-');
    const s = w.s;
    push(s.stock, evr.body.stock_left); push(s.r202, r202); push(s.r409, r409); push(s.rerr, rerr);
    push(s.p50, p50); push(s.p99, p99); push(s.kafka, cur.kafka); push(s.rows, rrows); push(s.lag, cur.lag);
    draw('c-stock', [s.stock], ['#1d2330']);
    draw('c-202', [s.r202], ['#1b6e2a']);
    draw('c-409', [s.r409], ['#b36b00']);
    draw('c-err', [s.rerr], ['#b00020']);
    draw('c-lat', [s.p50, s.p99], ['#2857a4', '#b00020']);
    draw('c-kafka', [s.kafka], ['#6a3fa0']);
    draw('c-rows', [s.rows], ['#1b6e2a']);
    draw('c-lag', [s.lag], ['#b36b00']);
  } catch (e) {
    setText('live-error', 'refresh failed: ' + e.message);
  } finally {
    w.busy = false;
  }
}

/* ---- the buyer's view ------------------------------------------------------------- */

/* Server time minus our clock, from the event answer's `now` (milliseconds), or from the
 * Date header (seconds) when the answer has none. */
let clockOffsetMs = 0;
let startsAt = null;
let countdownTimer = null;
let pollTimer = null;
let buyerChallenge = null; /* the loaded event's "challenge", or null */

function serverNowFrom(r) {
  if (r.body && typeof r.body.now === 'string') {
    const t = Date.parse(r.body.now);
    if (!Number.isNaN(t)) return t;
  }
  const d = r.headers.get('Date');
  return d ? Date.parse(d) : null;
}

async function loadBuyerEvent() {
  setText('buyer-error', '');
  const token = $('buyer-token').value.trim(), id = $('buyer-event').value.trim();
  if (!/^[1-9][0-9]{0,18}$/.test(id)) { setText('buyer-error', 'an event id is a decimal number'); return false; }
  const before = Date.now();
  const r = await api('GET', '/api/v1/events/' + id, token);
  if (r.status !== 200 || !r.body) { setText('buyer-error', errorText(r)); return false; }
  const server = serverNowFrom(r);
  if (server !== null) {
    clockOffsetMs = server - (before + Date.now()) / 2;
    setText('clock-skew', '(server clock ' + (clockOffsetMs >= 0 ? '+' : '') + fmt(clockOffsetMs) + ' ms)');
  }
  startsAt = Date.parse(r.body.starts_at);
  buyerChallenge = r.body.challenge || null;
  setText('challenge-state', !buyerChallenge ? 'none'
    : buyerChallenge.kind === 'path' ? 'a hidden order path, asked for when you buy'
    : 'difficulty ' + buyerChallenge.difficulty + ', solved when you buy');
  if (countdownTimer) clearInterval(countdownTimer);
  const show = () => {
    const left = startsAt - (Date.now() + clockOffsetMs);
    setText('countdown', left <= 0 ? 'started' : fmt(left / 1000, 1) + ' s');
  };
  show();
  countdownTimer = setInterval(show, 100);
  return true;
}

/* ---- the event's proof-of-work challenge (issue 31; common/sk_pow.h's rule) ------------
 * A solution is "<challenge>.<counter>" whose SHA-256 starts with `difficulty` zero bits.
 * SHA-256 in plain JavaScript, not crypto.subtle: that one is async per hash (slow at
 * thousands of tries) and absent outside secure contexts. The challenge's whole 64-byte
 * blocks are hashed once; each counter costs the last block or two. */
const SHA_K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
const SHA_W = new Uint32Array(64);

/* One compression of block `b` (64 bytes from offset `o`) into the state h (8 words). */
function shaBlock(h, b, o) {
  const w = SHA_W;
  for (let i = 0; i < 16; i++)
    w[i] = (b[o + 4 * i] << 24) | (b[o + 4 * i + 1] << 16) | (b[o + 4 * i + 2] << 8) | b[o + 4 * i + 3];
  for (let i = 16; i < 64; i++) {
    const x = w[i - 15], y = w[i - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
  }
  let a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (hh + S1 + ((e & f) ^ (~e & g)) + SHA_K[i] + w[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & bb) ^ (a & c) ^ (bb & c))) | 0;
    hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = bb; bb = a; a = (t1 + t2) | 0;
  }
  h[0] = (h[0] + a) | 0; h[1] = (h[1] + bb) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0;
  h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + hh) | 0;
}

function leadingZeros(h) {
  let n = 0;
  for (let i = 0; i < 8; i++) {
    if (h[i] === 0) { n += 32; continue; }
    return n + Math.clz32(h[i]);
  }
  return n;
}

/* Solves `challenge` (ASCII) for `bits`: resolves to {solution, tries, ms}. Works in slices
 * of about 50 ms so that the page stays responsive; onProgress(tries) after each. */
async function solveChallenge(challenge, bits, onProgress) {
  const prefix = new TextEncoder().encode(challenge + '.');
  const full = prefix.length - (prefix.length % 64);
  const mid = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  for (let o = 0; o < full; o += 64) shaBlock(mid, prefix, o);
  const tail = new Uint8Array(128), h = new Uint32Array(8);
  const rest = prefix.length - full;
  tail.set(prefix.subarray(full));
  const t0 = performance.now();
  for (let counter = 0; ; ) {
    const sliceEnd = performance.now() + 50;
    do {
      const digits = String(counter);
      let n = rest;
      for (let i = 0; i < digits.length; i++) tail[n++] = digits.charCodeAt(i);
      const total = prefix.length + digits.length, blocks = n + 9 > 64 ? 2 : 1;
      tail[n++] = 0x80;
      tail.fill(0, n, blocks * 64);
      const bitsLen = total * 8; /* < 2^32: one word is enough */
      tail[blocks * 64 - 4] = bitsLen >>> 24; tail[blocks * 64 - 3] = (bitsLen >>> 16) & 255;
      tail[blocks * 64 - 2] = (bitsLen >>> 8) & 255; tail[blocks * 64 - 1] = bitsLen & 255;
      h.set(mid);
      shaBlock(h, tail, 0);
      if (blocks === 2) shaBlock(h, tail, 64);
      if (leadingZeros(h) >= bits)
        return { solution: challenge + '.' + digits, tries: counter + 1, ms: performance.now() - t0 };
      counter++;
    } while ((counter & 1023) !== 0 || performance.now() < sliceEnd);
    if (onProgress) onProgress(counter);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}
window.seckillSolveChallenge = solveChallenge; /* for the browser test's measurements */

/* The Seckill-Challenge header for the buyer's order, when the event has a challenge:
 * {} when it has none, null (with the error shown) when it cannot be had. */
async function challengeHeaders(id, token, challenge) {
  if (!challenge || challenge.kind !== 'pow') return {};
  const r = await api('GET', '/api/v1/events/' + id + '/challenge', token);
  if (r.status !== 200 || !r.body) { setText('buyer-error', errorText(r)); return null; }
  setText('challenge-state', 'solving (difficulty ' + r.body.difficulty + ')');
  const s = await solveChallenge(r.body.challenge, r.body.difficulty,
    (n) => setText('challenge-state', 'solving (difficulty ' + r.body.difficulty + '): ' + fmt(n) + ' tries'));
  setText('challenge-state', 'solved in ' + fmt(s.ms) + ' ms (' + fmt(s.tries) + ' tries)');
  return { [r.body.header]: s.solution };
}

async function buy(ev) {
  ev.preventDefault();
  if (!(await loadBuyerEvent())) return;
  const token = $('buyer-token').value.trim(), id = $('buyer-event').value.trim();
  const extra = await challengeHeaders(id, token, buyerChallenge);
  if (!extra) return;
  let path = '/api/v1/events/' + id + '/orders';
  if (buyerChallenge && buyerChallenge.kind === 'path') { /* given out once the sale started */
    const p = await api('GET', '/api/v1/events/' + id + '/order-path', token);
    if (p.status !== 200 || !p.body) { setText('buyer-error', errorText(p)); return; }
    path = p.body.path;
    setText('challenge-state', 'hidden path given: ' + path);
  }
  const q = Number($('buyer-quantity').value) || 1; /* units (issue 31): 1 sends {} as before */
  const r = await api('POST', path, token, q > 1 ? { quantity: q } : {}, extra);
  if (r.status !== 202 || !r.body) {
    setText('buyer-error', errorText(r));
    if (r.body && typeof r.body.order_id === 'string') follow(r.body.order_id, token);
    return;
  }
  follow(r.body.order_id, token);
}

/* Polls the order until it leaves `queued` (or 60 s pass). */
function follow(orderId, token) {
  setText('order-id', orderId);
  setText('order-status', 'queued');
  if (pollTimer) clearInterval(pollTimer);
  const until = Date.now() + 60000;
  const poll = async () => {
    const r = await api('GET', '/api/v1/orders/' + orderId, token);
    if (r.status === 200 && r.body && typeof r.body.status === 'string') {
      setText('order-status', r.body.status);
      if (r.body.status !== 'queued') clearInterval(pollTimer);
    } else if (r.status !== 404) {
      setText('buyer-error', errorText(r));
    }
    if (Date.now() > until) clearInterval(pollTimer);
  };
  poll();
  pollTimer = setInterval(poll, REFRESH_MS);
}

/* ---- wiring ----------------------------------------------------------------------- */

(function init() {
  const q = new URLSearchParams(location.search);
  /* The consumer's metrics: ?consumer=URL, or the local stack's layout (the consumer's
   * port is the front's + 1). */
  const port = Number(location.port || (location.protocol === 'https:' ? 443 : 80));
  $('consumer-url').value = q.get('consumer') || (location.protocol + '//' + location.hostname + ':' + (port + 1) + '/metrics');
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', signOut);
  $('create-form').addEventListener('submit', createEvent);
  $('watch-form').addEventListener('submit', startWatch);
  $('buyer-form').addEventListener('submit', buy);
  $('buyer-load').addEventListener('click', loadBuyerEvent);
})();
