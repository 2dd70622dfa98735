import { describe, expect, it } from "vitest";
import type { AgentState } from "./agent-state.js";
import { credentialFor, noCredentialError } from "./server-credential.js";

const saved = (serverUrl: string, serverId?: string): AgentState => ({
  version: 1,
  server_url: serverUrl,
  ...(serverId !== undefined ? { server_id: serverId } : {}),
  node_name: "node-a",
  credential: "saved-credential-000001",
  control_secret_hash: "0".repeat(64),
  replicas: [],
});

describe("the credential a starting agent holds", () => {
  it("is the saved one, ready to use, for the URL it was used with", () => {
    expect(credentialFor(saved("http://control:8080/", "ab".repeat(16)), "http://control:8080/")).toEqual({
      credential: "saved-credential-000001",
      controlSecretHash: "0".repeat(64),
      serverUrl: "http://control:8080/",
      serverId: "ab".repeat(16),
      unverified: false,
    });
  });

  it("is held unverified, still for its own server, when the agent is pointed at another URL", () => {
    expect(credentialFor(saved("http://10.0.0.5:8080/", "ab".repeat(16)), "https://control.example:8443/")).toMatchObject({
      credential: "saved-credential-000001",
      serverUrl: "http://10.0.0.5:8080/",
      unverified: true,
    });
  });

  it("is none at another URL when the saved server told no identity: nothing could check the new one", () => {
    expect(credentialFor(saved("http://10.0.0.5:8080/"), "http://localhost:8080/").credential).toBeUndefined();
  });

  it("is none without a state file", () => {
    expect(credentialFor(undefined, "http://control:8080/")).toMatchObject({ credential: undefined, serverUrl: "http://control:8080/", unverified: false });
  });
});

describe("the refusal of a start with no join token and no usable credential", () => {
  it("says why a credential for another URL is not sent, and both ways out", () => {
    const error = noCredentialError("node-a", "http://localhost:8080/", "/data/agent-state.json", saved("http://10.0.0.5:8080/"));
    expect(error.message).toContain("earned from the server at http://10.0.0.5:8080/, which did not tell its identity");
    expect(error.hint).toContain("Point --server back at http://10.0.0.5:8080/ once");
    expect(error.hint).toContain("llmgw ctl node token");
  });

  it("keeps its words when there is no credential at all", () => {
    expect(noCredentialError("node-a", "http://control:8080/", "/data/agent-state.json", undefined).message).toBe(
      "agent node-a has no join token and no saved credential for http://control:8080/ in /data/agent-state.json",
    );
  });
});
