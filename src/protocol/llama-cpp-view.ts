/** Which llama.cpp a node runs: llama-server (its path and version) or llmgw's built-in engine with the builds it has. */
export type NodeLlamaCppView =
  | { kind: "llama-server"; path: string; version: string | null }
  | { kind: "built-in"; version: string; builds: string[]; build: string };
