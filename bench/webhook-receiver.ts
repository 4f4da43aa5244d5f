/**
 * A webhook receiver for bench/events.ts, in a process of its own (as a receiver is in production: its CPU must not
 * slow the benchmark's client). Answers 204 to every POST, counts distinct `webhook-id`s, and tells its parent the
 * port when listening and the count when asked ('count').
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

const ids = new Set<string>();
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    ids.add(String(req.headers['webhook-id']));
    res.writeHead(204).end();
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('message', () => process.send?.({ count: ids.size }));
process.on('disconnect', () => process.exit(0));
