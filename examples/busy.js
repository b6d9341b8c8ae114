'use strict';
// Example for `v8dbg profile`: a process kept busy parsing JSON batches,
// totalling them per customer, sorting, rendering a report and hashing it,
// turn after turn of its event loop. Run it with `node examples/busy.js &`,
// then `python -m v8dbg profile --pid $! --duration 5 -o flame.svg`.

const line = '{customer}: orders={count} total={sum} largest={max}';

function makeBatch(n) {
  const orders = [];
  for (let i = 0; i < n; i++) {
    const items = [];
    for (let j = 0; j < 1 + (i % 5); j++) items.push({ sku: `sku-${(i * 7 + j) % 97}`, price: (i % 13) + j * 0.25, qty: 1 + (j % 3) });
    orders.push({ id: i, customer: `c${i % 31}`, items });
  }
  return JSON.stringify(orders);
}

function parseBatch(text) {
  return JSON.parse(text);
}

function orderTotal(order) {
  let t = 0;
  for (const item of order.items) t += item.price * item.qty;
  return t;
}

function byCustomer(orders) {
  const groups = new Map();
  for (const order of orders) {
    let g = groups.get(order.customer);
    if (!g) groups.set(order.customer, (g = []));
    g.push(orderTotal(order));
  }
  return groups;
}

function summarize(groups) {
  const rows = [];
  for (const [customer, totals] of groups) {
    totals.sort((a, b) => a - b);
    const sum = totals.reduce((a, b) => a + b, 0);
    rows.push({ customer, count: totals.length, sum: sum.toFixed(2), max: totals[totals.length - 1] });
  }
  return rows.sort((a, b) => b.sum - a.sum);
}

function render(rows) {
  return rows.map((row) => line.replace(/\{(\w+)\}/g, (_, key) => String(row[key]))).join('\n');
}

function checksum(text) {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

function handleBatch(text) {
  const report = render(summarize(byCustomer(parseBatch(text))));
  return checksum(report.repeat(20));
}

const batch = makeBatch(400);
let last = 0;

function turn() {
  for (let i = 0; i < 20; i++) last ^= handleBatch(batch);
  setImmediate(turn);
}

turn();
