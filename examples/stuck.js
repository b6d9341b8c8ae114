'use strict';
// A server that answers nothing: each request's handler awaits a user lookup,
// which awaits a database query whose connection pool never hands out a
// connection (its one connection was never released). No thread is busy and
// the stacks show only the event loop; the work waits in promises.
// Run it with `node examples/stuck.js &`, then `gcore PID`, then `v8dbg jsasync`.
const http = require('http');

const pool = { waiting: [], acquire() { return new Promise((ok) => this.waiting.push(ok)); } };

async function query(sql) {
  const conn = await pool.acquire();
  return conn.run(sql);
}

async function fetchUser(id) {
  const rows = await query(`select * from users where id = ${id}`);
  return rows[0];
}

async function handler(req, res) {
  const user = await fetchUser(req.url.slice(1));
  res.end(JSON.stringify(user));
}

async function refreshCache() {
  await Promise.all([query('select 1'), query('select 2')]);
}

const server = http.createServer(handler).listen(0, () => {
  const { port } = server.address();
  console.log(`pid ${process.pid}: listening on ${port}`);
  for (let i = 0; i < 37; i++) http.get(`http://127.0.0.1:${port}/${i}`).on('error', () => {});
  refreshCache();
});
