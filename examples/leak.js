'use strict';
// A service that leaks: every request's session is cached and never
// evicted, and each keeps its request's parsed body alive through a closure.
// Run it with `node examples/leak.js &`, let it grow, then take a core of the
// running process with `gcore PID` and count what fills its heap.
const http = require('http');

class Session {
  constructor(id, user) { this.id = id; this.user = user; this.created = Date.now(); }
}
const sessions = new Map();           // the leak: nothing ever deletes from it

function remember(id, body) {
  const session = new Session(id, body.user);
  session.onExpire = () => body.items.length;   // holds `body` alive
  sessions.set(id, session);
}

let next = 0;
const server = http.createServer((req, res) => {
  remember(next++, { user: `u${next % 97}`, items: new Array(20).fill(next) });
  res.end('ok\n');
});
server.listen(0, '127.0.0.1', () => {
  // Drive it from inside so the example needs no client: 20,000 requests' worth.
  for (let i = 0; i < 20000; i++) remember(next++, { user: `u${i % 97}`, items: new Array(20).fill(i) });
  console.log(`pid ${process.pid} listening on ${server.address().port}, ${sessions.size} sessions`);
});
