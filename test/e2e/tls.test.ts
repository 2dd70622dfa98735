import { writeFileSync } from "node:fs";
import type { Server } from "node:http";
import https from "node:https";
import { connect, type PeerCertificate, type TLSSocket } from "node:tls";
import path from "node:path";
import OpenAI from "openai";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../../src/server/start-server.js";
import { makeCa, makeServerCertificate, type TestCa } from "../support/certificates.js";
import { fakeOpenAIProvider, listenOnLoopback } from "../support/fake-openai-provider.js";
import pino from "pino";
import { killGroup, waitFor, writeFakeEngine } from "../support/fake-engine.js";
import { startAgent, type RunningAgent } from "../../src/agent/agent.js";
import { readTlsFiles } from "../../src/net/tls-files.js";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { llmgwBin, runCli, withoutLlmgwVariables } from "../support/processes.js";
import { spawn } from "node:child_process";

/** The certificate a new connection to `url` is served, checked against `ca`. */
function servedCertificate(url: string, ca: Buffer): Promise<PeerCertificate> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca }, () => {
      resolve(socket.getPeerCertificate());
      socket.end();
    });
    socket.once("error", reject);
  });
}

describe("the server over HTTPS", () => {
  let directory: string;
  let ca: TestCa;
  let provider: Server;
  let server: RunningServer;
  let openai: OpenAI;
  let dispatcher: Agent;
  let openaiFetch: typeof fetch;
  const agents: RunningAgent[] = [];
  const adminHeaders = () => ({ authorization: `Bearer ${server.createdAdminToken?.token ?? ""}` });
  const joinToken = async () => (server.app.inject({ method: "POST", url: "/api/v1/node-tokens", headers: adminHeaders(), payload: {} }).then((answer) => (answer.json() as { token: string }).token));

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-tls-");
    ca = makeCa(directory, "cluster-ca");
    makeServerCertificate(directory, ca, "server", "server-first");
    provider = fakeOpenAIProvider();
    const providerPort = await listenOnLoopback(provider);
    // Relative paths: read beside server.yaml, whatever the directory the server starts in.
    writeFileSync(
      path.join(directory, "server.yaml"),
      `gateway: { auth: open }
tls: { cert: server.crt, key: server.key }
nodes: { ca: cluster-ca.crt, heartbeat_deadline: 10s, settling_window: 0s }
reconcile: { interval: 300ms }
models:
  - name: tiny
    context: 4096
    profiles:
      - { engine: vllm, source: "hf://example/tiny@main", gpu_class: h100, gpus: 1 }
  - name: remote-chat
    external: { base_url: "http://127.0.0.1:${providerPort}/v1", api_key_env: FAKE_PROVIDER_KEY, model: upstream }
`,
    );
    process.env.FAKE_PROVIDER_KEY = "sk-provider";
    server = await startServer({ configPath: path.join(directory, "server.yaml"), dataDir: path.join(directory, "data"), listen: "127.0.0.1:0" });
    dispatcher = new Agent({ connect: { ca: ca.cert } });
    // undici's fetch with the CA, in the place of the global fetch the client would use; the cast bridges undici's and the DOM's fetch types.
    openaiFetch = ((input: string | URL | Request, init?: RequestInit) => undiciFetch(input as string, { ...(init as object), dispatcher })) as unknown as typeof fetch;
    openai = new OpenAI({
      baseURL: `${server.url}/v1`,
      apiKey: "unused",
      maxRetries: 0,
      // The official client over HTTPS with the cluster's CA, as a user with a private CA configures it.
      fetch: openaiFetch,
    });
  });

  afterAll(async () => {
    for (const agent of agents) {
      const groups = agent.supervisor.persisted().map((record) => record.process_group);
      await agent.close();
      for (const group of groups) killGroup(group);
    }
    await server?.close();
    provider?.close();
    await dispatcher?.close();
  });

  it("says https in its address and answers the official openai client through the gateway's own front", async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const handOffsBefore = server.gateway.metrics.handOffs;
    const answer = await openai.chat.completions.create({ model: "remote-chat", messages: [{ role: "user", content: "hello" }] });
    expect(answer.choices[0]?.message.content).toBe("hi");
    const streamed = await openai.chat.completions.create({ model: "remote-chat", messages: [{ role: "user", content: "hello" }], stream: true });
    let text = "";
    for await (const chunk of streamed) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("hi");
    // Both POSTs were read off the decrypted socket by the front, none handed to node's parser.
    expect(server.gateway.metrics.handOffs).toBe(handOffsBefore);
    const models = await openai.models.list();
    expect(models.data.map((model) => model.id)).toContain("remote-chat");
  });

  it("takes an agent joining over HTTPS, and places a replica on it through the agent's own HTTPS control API", async () => {
    const engineScript = await writeFakeEngine(directory);
    const agentCertificate = makeServerCertificate(directory, ca, "agent-1");
    const agent = await startAgent({
      server: server.url,
      joinToken: await joinToken(),
      name: "gpu-1",
      dataDirectory: path.join(directory, "gpu-1"),
      simulate: "1xH100-80GB@nvl0,cpu:8c/32g",
      llmgwCommand: [process.execPath, engineScript],
      healthPollMs: 100,
      stopGraceMs: 2000,
      logger: pino({ level: "silent" }),
      ca: ca.cert,
      tls: readTlsFiles({ ...agentCertificate, certWhere: "--tls-cert", keyWhere: "--tls-key" }),
    });
    agents.push(agent);
    await agent.connected;
    expect(agent.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const node = (await server.app.inject({ method: "GET", url: "/api/v1/nodes/gpu-1", headers: adminHeaders() })).json() as NodeView;
    expect(node).toMatchObject({ state: "ready", address: agent.url });
    // The reconciler starts tiny's replica by calling the agent: that call verified the agent's certificate against nodes.ca.
    const ready = await waitFor(async () => {
      const list = ((await server.app.inject({ method: "GET", url: "/api/v1/replicas?model=tiny", headers: adminHeaders() })).json() as { replicas: ReplicaView[] }).replicas;
      return list.find((replica) => replica.state === "ready" && replica.node === "gpu-1");
    }, 30_000, "tiny's replica ready on gpu-1");
    expect(ready.node).toBe("gpu-1");
  });

  it("keeps an agent that does not trust the server's CA out, saying why and what to give", async () => {
    const otherCa = makeCa(directory, "other-ca");
    const lines: string[] = [];
    const agent = await startAgent({
      server: server.url,
      joinToken: await joinToken(),
      name: "gpu-wrong-ca",
      dataDirectory: path.join(directory, "gpu-wrong-ca"),
      simulate: "1xH100-80GB@nvl0,cpu:8c/32g",
      logger: pino({ level: "warn" }, { write: (line: string) => lines.push(line) }),
      ca: otherCa.cert,
    });
    agents.push(agent);
    const refused = await waitFor(() => lines.find((line) => line.includes("join failed")), 20_000, "the refused join in the agent's log");
    expect(refused).toContain("its certificate is not signed by a CA this process trusts");
    expect(refused).toContain("--ca FILE");
    const listed = (await server.app.inject({ method: "GET", url: "/api/v1/nodes", headers: adminHeaders() })).json() as { nodes: NodeView[] };
    expect(listed.nodes.map((entry) => entry.name)).not.toContain("gpu-wrong-ca");
  });

  it("lets ctl in with --ca or LLMGW_CA, and refuses the wrong CA saying what failed and the --ca fix", async () => {
    const token = server.createdAdminToken?.token ?? "";
    const trusted = await runCli(["ctl", "--server", server.url, "--token", token, "--ca", ca.certFile, "models"]);
    expect(trusted.stderr).toBe("");
    expect(trusted.stdout).toContain("remote-chat");
    const fromEnvironment = await runCli(["ctl", "--server", server.url, "--token", token, "models"], { env: { LLMGW_CA: ca.certFile } });
    expect(fromEnvironment.stdout).toContain("remote-chat");

    const otherCa = makeCa(directory, "not-the-cluster-ca");
    const refused = await runCli(["ctl", "--server", server.url, "--token", token, "--ca", otherCa.certFile, "models"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`refused the server at ${server.url}: its certificate is not signed by a CA this process trusts`);
    expect(refused.stderr).toContain("Give the CA that signed the server's certificate with --ca FILE (or LLMGW_CA=FILE)");
    // Without any CA the system's alone are trusted, and they did not sign this one.
    const noCa = await runCli(["ctl", "--server", server.url, "--token", token, "models"]);
    expect(noCa.code).not.toBe(0);
    expect(noCa.stderr).toContain("--ca FILE");
  });

  it("runs an extra gateway over HTTPS that follows the server over HTTPS with --ca", async () => {
    const gatewayCertificate = makeServerCertificate(directory, ca, "gateway", "extra-gateway");
    const child = spawn(
      process.execPath,
      [llmgwBin, "gateway", "--server", server.url, "--listen", "127.0.0.1:0", "--auth", "open", "--ca", ca.certFile, "--tls-cert", gatewayCertificate.certFile, "--tls-key", gatewayCertificate.keyFile],
      { env: { ...withoutLlmgwVariables(process.env), LLMGW_TOKEN: server.createdAdminToken?.token ?? "" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    try {
      const url = await waitFor(() => /listening on (https:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1], 60_000, `the gateway to listen:\n${output}`);
      expect((await servedCertificate(url, ca.cert)).subject.CN).toBe("extra-gateway");
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, fetch: openaiFetch });
      const answer = await client.chat.completions.create({ model: "remote-chat", messages: [{ role: "user", content: "hello" }] });
      expect(answer.choices[0]?.message.content).toBe("hi");
    } finally {
      child.kill("SIGTERM");
    }
  });

  it("tells ctl pointed at http:// on its port that it speaks TLS, and the https:// address to use, not that it is down", async () => {
    const plain = server.url.replace("https:", "http:");
    const told = await runCli(["ctl", "--server", plain, "--token", server.createdAdminToken?.token ?? "", "--ca", ca.certFile, "models"]);
    expect(told.code).toBe(1);
    expect(told.stderr).toContain(`${plain} speaks TLS`);
    expect(told.stderr).toContain(`--server ${server.url}`);
    expect(told.stderr).not.toContain("Start it");
  });

  it("refuses a plain-HTTP client rather than answering it in the clear", async () => {
    await expect(fetch(server.url.replace("https:", "http:") + "/healthz")).rejects.toThrow();
  });

  it("serves a renewed certificate to new connections and keeps answering a kept-alive one", async () => {
    // A kept-alive connection opened on the first certificate.
    const keptAlive = new https.Agent({ ca: ca.cert, keepAlive: true, maxSockets: 1 });
    const first = await getOver(keptAlive, `${server.url}/healthz`);
    expect(first.status).toBe(200);
    expect(first.socket.getPeerCertificate().subject.CN).toBe("server-first");

    makeServerCertificate(directory, ca, "server", "server-renewed");
    const renewed = await waitFor(async () => {
      const certificate = await servedCertificate(server.url, ca.cert);
      return certificate.subject.CN === "server-renewed" ? certificate : undefined;
    }, 20_000, "the renewed certificate to be served");
    expect(renewed.subject.CN).toBe("server-renewed");

    const again = await openai.chat.completions.create({ model: "remote-chat", messages: [{ role: "user", content: "hello" }] });
    expect(again.choices[0]?.message.content).toBe("hi");
    // The same socket, still on the first certificate, still answered.
    const onOldConnection = await getOver(keptAlive, `${server.url}/healthz`);
    expect(onOldConnection.status).toBe(200);
    expect(onOldConnection.socket).toBe(first.socket);
    expect(onOldConnection.socket.getPeerCertificate().subject.CN).toBe("server-first");
    keptAlive.destroy();
  });
});

function getOver(agent: https.Agent, url: string): Promise<{ status: number; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const request = https.get(url, { agent }, (response) => {
      // Taken now: once the answer is read the socket goes back to the agent's pool.
      const socket = response.socket as TLSSocket;
      response.resume();
      response.once("end", () => resolve({ status: response.statusCode ?? 0, socket }));
    });
    request.once("error", reject);
  });
}
