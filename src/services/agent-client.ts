import type { Readable } from "node:stream";
import { request, type Dispatcher } from "undici";
import type { z } from "zod";
import {
  agentPaths,
  fetchAnswerSchema,
  fetchListSchema,
  protocolVersion,
  replicaAnswerSchema,
  type FetchStatus,
  type ReplicaSpec,
  type ReplicaStatus,
  readErrorBody,
} from "../protocol/index.js";
import { errorCodes, type ErrorCode, DomainError } from "../errors/index.js";
import { certificateFailure } from "../net/light.js";

/** The node as the server calls it: its control URL and the control secret the agent checks. */
export interface AgentAddress {
  readonly name: string;
  readonly address: string;
  readonly controlSecret: string;
  /** Verifies an HTTPS control API against the private CA in force; undefined: the system's CAs. */
  readonly dispatcher?: Dispatcher | undefined;
}

function unreachable(node: AgentAddress, error: unknown): DomainError {
  const certificate = certificateFailure(error);
  if (certificate) {
    return new DomainError(
      "agent_unreachable",
      `refused the agent of node ${node.name} at ${node.address}: ${certificate.reason}`,
      "Give the server the CA that signed the agents' certificates in server.yaml (nodes: { ca: FILE }), or renew the agent's certificate; verification cannot be turned off.",
    );
  }
  return new DomainError(
    "agent_unreachable",
    `could not reach the agent of node ${node.name} at ${node.address}: ${(error as Error).message}`,
    "Check that the agent runs and that the server can reach its --listen address (use --advertise when it is behind NAT or listens on 0.0.0.0).",
  );
}

/** An agent's refusal, passed on with its own code when it is one of ours, so the API answers as the agent did. */
function agentRefusal(node: AgentAddress, status: number, text: string): DomainError {
  const body = readErrorBody(text);
  if (body?.code !== undefined && body.code in errorCodes) {
    return new DomainError(body.code as ErrorCode, body.message, body.hint ?? "");
  }
  return new DomainError("agent_unreachable", `the agent of node ${node.name} at ${node.address} answered ${status}: ${text.slice(0, 300)}`, "Check the agent's log.");
}

async function call<Answer>(node: AgentAddress, method: "GET" | "POST" | "DELETE", path: string, schema: z.ZodType<Answer>, body?: unknown, timeoutMs = 15_000): Promise<Answer> {
  let response;
  try {
    response = await request(new URL(path, node.address), {
      method,
      headers: { authorization: `Bearer ${node.controlSecret}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? null : JSON.stringify(body),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      ...(node.dispatcher ? { dispatcher: node.dispatcher } : {}),
    });
  } catch (error) {
    throw unreachable(node, error);
  }
  const text = await response.body.text();
  if (response.statusCode >= 300) throw agentRefusal(node, response.statusCode, text);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new DomainError(
      "agent_unreachable",
      `the agent of node ${node.name} at ${node.address} answered ${response.statusCode} with a body that is not JSON: ${text.slice(0, 200)}`,
      "Something other than the agent may answer at that address: check the agent's --listen and --advertise, and any proxy in between.",
    );
  }
  const answer = schema.safeParse(json);
  if (!answer.success) throw new DomainError("version_unsupported", `the agent of node ${node.name} answered in a form this server cannot read: ${answer.error.message}`, "Run agents of the server's release.");
  return answer.data;
}

export async function startReplicaOnAgent(node: AgentAddress, spec: ReplicaSpec): Promise<ReplicaStatus> {
  return (await call(node, "POST", agentPaths.replicas, replicaAnswerSchema, { protocol: protocolVersion, replica: spec })).replica;
}

export async function stopReplicaOnAgent(node: AgentAddress, id: string, drain: boolean): Promise<ReplicaStatus> {
  return (await call(node, "DELETE", `${agentPaths.replica(id)}${drain ? "?drain=1" : ""}`, replicaAnswerSchema)).replica;
}

/** Asks the agent to put a source (resolved: no `mirror:`) in its weights cache; answers where that stands. */
export async function startFetchOnAgent(node: AgentAddress, source: string): Promise<FetchStatus> {
  return (await call(node, "POST", agentPaths.fetches, fetchAnswerSchema, { protocol: protocolVersion, source })).fetch;
}

/** Every fetch the agent was asked for since it started, with its progress. */
export async function fetchesOnAgent(node: AgentAddress): Promise<FetchStatus[]> {
  return (await call(node, "GET", agentPaths.fetches, fetchListSchema)).fetches;
}

/** A load fetches the adapter to the node first: minutes for a large one from a slow mirror. */
const adapterChangeTimeoutMs = 600_000;

export async function loadAdapterOnAgent(node: AgentAddress, id: string, adapter: { name: string; source: string }, apiKey: string | undefined): Promise<ReplicaStatus> {
  return (await call(node, "POST", agentPaths.replicaAdapters(id), replicaAnswerSchema, { protocol: protocolVersion, adapter, ...(apiKey !== undefined ? { api_key: apiKey } : {}) }, adapterChangeTimeoutMs)).replica;
}

export async function unloadAdapterOnAgent(node: AgentAddress, id: string, adapter: string, apiKey: string | undefined): Promise<ReplicaStatus> {
  return (await call(node, "POST", agentPaths.replicaAdapterUnload(id, adapter), replicaAnswerSchema, { protocol: protocolVersion, ...(apiKey !== undefined ? { api_key: apiKey } : {}) }, adapterChangeTimeoutMs)).replica;
}

/** The replica's log from its agent, streamed through while `follow`. */
export async function replicaLogsFromAgent(node: AgentAddress, id: string, tail: number, follow: boolean, signal?: AbortSignal): Promise<Readable> {
  let response;
  try {
    response = await request(new URL(`${agentPaths.replicaLogs(id)}?tail=${tail}${follow ? "&follow=1" : ""}`, node.address), {
      method: "GET",
      headers: { authorization: `Bearer ${node.controlSecret}` },
      headersTimeout: 15_000,
      // A followed log may be quiet for hours.
      bodyTimeout: 0,
      ...(signal ? { signal } : {}),
      ...(node.dispatcher ? { dispatcher: node.dispatcher } : {}),
    });
  } catch (error) {
    throw unreachable(node, error);
  }
  if (response.statusCode >= 300) throw agentRefusal(node, response.statusCode, await response.body.text());
  return response.body;
}
