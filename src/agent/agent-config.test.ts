import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultHubUrl, defaultNodeName, resolveAgentConfig } from "./agent-config.js";

describe("the agent's configuration", () => {
  it("fills every default once: the host's name, its own fabric, a loopback control API on any port", () => {
    const config = resolveAgentConfig({ server: "http://control:8080" }, {}, "gpu-7.example.org");
    expect(config).toMatchObject({
      name: "gpu-7",
      fabric: "gpu-7",
      serverUrl: "http://control:8080/",
      listen: { host: "127.0.0.1", port: 0 },
      hubUrl: defaultHubUrl,
      heartbeatIntervalMs: 2000,
      stopGraceMs: 30_000,
      terminalRetentionMs: 60_000,
    });
    expect(config.dataDirectory).toBe(path.resolve("llmgw-agent-data"));
    expect(config.stateFile).toBe(path.join(path.resolve("llmgw-agent-data"), "agent-state.json"));
  });

  it("takes the hub and its token from HF_ENDPOINT and HF_TOKEN, and a flag over either", () => {
    const environment = { HF_ENDPOINT: "http://mirror.local", HF_TOKEN: "hf_secret" };
    expect(resolveAgentConfig({ server: "http://control:8080" }, environment, "node")).toMatchObject({ hubUrl: "http://mirror.local", hubToken: "hf_secret" });
    expect(resolveAgentConfig({ server: "http://control:8080", hubUrl: "http://other.local", hubToken: "t" }, environment, "node")).toMatchObject({ hubUrl: "http://other.local", hubToken: "t" });
  });

  it("refuses a server that is not a URL, saying what to give", () => {
    expect(() => resolveAgentConfig({ server: "control plane" }, {}, "node")).toThrow(/--server "control plane" is not a URL/);
  });

  it("refuses a node name the server would refuse, naming --name", () => {
    expect(() => resolveAgentConfig({ server: "http://control:8080", name: "-bad name" }, {}, "node")).toThrow(/--name "-bad name"/);
  });

  it("names --listen when it is not HOST:PORT", () => {
    expect(() => resolveAgentConfig({ server: "http://control:8080", listen: "nowhere" }, {}, "node")).toThrow(/--listen/);
  });

  it("makes a usable node name of any host name", () => {
    expect(defaultNodeName("__weird host__.lan")).toBe("weird-host__");
    expect(defaultNodeName("...")).toBe("node");
    expect(defaultNodeName("a".repeat(80))).toHaveLength(63);
  });
});
