import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopReplicaOnAgent } from "./agent-client.js";

describe("calling an agent", () => {
  let server: http.Server;
  let address = "";

  beforeAll(async () => {
    // Something other than an agent at the node's address: a web server's welcome page.
    server = http.createServer((_request, response) => response.writeHead(200, { "content-type": "text/html" }).end("<html>Welcome to nginx!</html>"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("names the node's address when the answer there is not JSON", async () => {
    await expect(stopReplicaOnAgent({ name: "gpu-1", address, controlSecret: "llmgw_control_x" }, "r1", false)).rejects.toMatchObject({
      code: "agent_unreachable",
      message: expect.stringContaining(`the agent of node gpu-1 at ${address} answered 200 with a body that is not JSON: <html>Welcome to nginx!`),
    });
  });
});
