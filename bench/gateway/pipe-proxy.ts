/**
 * The least a proxy written on node can do: each client connection gets a
 * connection of its own to the backend, and bytes are piped both ways
 * untouched (no HTTP parsed, no key checked, no model routed, no usage
 * counted). Measured beside the gateway, it is the floor node itself sets on
 * this machine: what llmgw costs above it is llmgw's, what it costs above
 * nginx's worker below that is node's.
 *
 * Run as its own process (`node pipe-proxy.js BACKEND_PORT`): it listens on a
 * free loopback port and prints `listening PORT` on stdout.
 */
import { connect, createServer } from "node:net";

const backendPort = Number(process.argv[2]);
if (!Number.isInteger(backendPort) || backendPort <= 0) {
  process.stderr.write("pipe-proxy: give the backend's port as the first argument, as in `node pipe-proxy.js 41000`\n");
  process.exit(2);
}

const server = createServer((client) => {
  const backend = connect(backendPort, "127.0.0.1");
  client.setNoDelay(true);
  backend.setNoDelay(true);
  client.pipe(backend);
  backend.pipe(client);
  // Either side closing or failing ends both: a half-open pair would hold a connection of the backend's.
  const end = () => {
    client.destroy();
    backend.destroy();
  };
  client.on("error", end).on("close", end);
  backend.on("error", end).on("close", end);
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === "object" && address ? address.port : 0}\n`);
});
process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  // Kept-alive client connections would hold close() open; the bench has stopped sending by now.
  setTimeout(() => process.exit(0), 500).unref();
});
