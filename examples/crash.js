'use strict';
// A small service that keeps some state and then hits a fatal error.
// Run with --abort-on-uncaught-exception to get a core at the throw.
class Order {
  constructor(id, items) { this.id = id; this.items = items; this.status = 'new'; }
}
class Inventory {
  constructor() { this.stock = new Map([['apple', 3], ['pear', 0]]); }
  take(item) {
    const left = this.stock.get(item);
    if (!left) throw new Error(`out of stock: ${item}`);
    this.stock.set(item, left - 1);
  }
}
const orders = [];
for (let i = 0; i < 500; i++) orders.push(new Order(i, ['apple']));
function fulfil(inv, order) { order.items.forEach((item) => inv.take(item)); order.status = 'done'; }
function handle(inv, order) { return fulfil(inv, order); }
setTimeout(function tick() {
  const inv = new Inventory();
  handle(inv, new Order(9001, ['pear']));
}, 10);
