import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { adminPath } from "../../client/index.js";
import { startServer } from "../../server/index.js";
import { buildProgram } from "../program.js";
import { renderCommandReference } from "./ctl-reference.js";
import { serialiseOpenApi } from "../../api/index.js";

/** Where each generated reference is committed, relative to the package root. */
export const referencePaths = { ctl: "docs/reference/ctl.md", openapi: "docs/reference/openapi.json" } as const;

export function renderCtlReference(): string {
  return renderCommandReference(buildProgram());
}

/**
 * The OpenAPI document as a real server serves it: every route registers
 * only when the whole server is wired (the reconciler's, canaries', pulls'),
 * so one is started on loopback with a throwaway data directory, asked, and
 * stopped.
 */
export async function renderOpenApiReference(): Promise<string> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "llmgw-openapi-"));
  try {
    const server = await startServer({ dataDir, listen: "127.0.0.1:0", logger: false });
    try {
      const answer = await server.app.inject({ method: "GET", url: adminPath("openapi", {}) });
      return serialiseOpenApi(answer.json());
    } finally {
      await server.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
