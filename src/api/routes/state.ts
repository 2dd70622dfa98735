import { createReadStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { catalogExportSchema } from "../../protocol/index.js";
import type { CatalogTransferService } from "../../services/index.js";
import type { Store } from "../../store/index.js";
import { requireActor } from "../access.js";
import { parseBody } from "../parse-body.js";

export interface StateRoutesParts {
  readonly store: Store;
  readonly transfer: CatalogTransferService;
  /** Writes the gateway's counted usage first, so a backup holds the last few seconds' too. */
  readonly flushUsage: () => Promise<void>;
}

/**
 * The state kept and moved: the catalog's export and import, and a backup of
 * the whole store. Admin only: the export names every key and token, and the
 * backup holds their hashes.
 */
export function registerStateRoutes(app: FastifyInstance, parts: StateRoutesParts): void {
  app.get("/api/v1/catalog/export", { config: { access: "admin", api: { summary: "The runtime catalog, gateway keys' and tokens' metadata (never a secret), for `ctl import` elsewhere", response: catalogExportSchema } } }, async () =>
    parts.transfer.export(),
  );

  app.post(
    "/api/v1/catalog/import",
    { config: { access: "admin", dryRun: true, api: { summary: "Import an export: all of it in one transaction, or nothing when a name collides; new keys and tokens are shown once", body: catalogExportSchema } } },
    async (request) => {
      const document = parseBody(catalogExportSchema, request.body);
      if (request.dryRun) return parts.transfer.previewImport(document);
      return parts.transfer.import(document, requireActor(request));
    },
  );

  app.get("/api/v1/backup", { config: { access: "admin", api: { summary: "An online, consistent copy of the SQLite state, as a database file (Postgres: refused with the pg_dump command)", produces: "application/vnd.sqlite3" } } }, async (_request, reply) => {
    await parts.flushUsage();
    const directory = await mkdtemp(path.join(tmpdir(), "llmgw-backup-"));
    const file = path.join(directory, "llmgw.db");
    try {
      await parts.store.backup(file);
    } catch (error) {
      await rm(directory, { recursive: true, force: true });
      throw error;
    }
    const body = createReadStream(file);
    // The copy is served once and removed however the answer ends (done, or the client gone).
    body.on("close", () => void rm(directory, { recursive: true, force: true }));
    return reply.header("content-type", "application/vnd.sqlite3").header("content-disposition", 'attachment; filename="llmgw.db"').send(body);
  });
}
