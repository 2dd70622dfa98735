/**
 * The triggers that keep fleet_revision moving: every write a view or a
 * decision could see bumps row 1, a fetch's progress bumps row 2, so a reader
 * asks one small row whether anything changed instead of reading the fleet.
 * Kept apart from the migrations that create and drop them.
 */

/** What a replica view or a decision reads of a replica row: all but `progress` (its own revision) and `updated_at`. */
const replicaShownColumns = ["id", "node", "model", "profile", "engine", "cards", "spec", "state", "status", "stop_requested", "created_at"] as const;
/** The columns of a node that show in its view; 0013 adds `fabric_network` (where the node is reached on its fabric). */
const nodeShownColumns = ["address", "fabric", "labels", "inventory", "credential_hash", "joined_at"] as const;
/** What every trigger runs: row 1 of fleet_revision for what the views and decisions read, row 2 for progress. */
const bumpFleetRevision = "UPDATE fleet_revision SET revision = revision + 1 WHERE id = 1";
const bumpProgressRevision = "UPDATE fleet_revision SET revision = revision + 1 WHERE id = 2";

export function replicaProgressTriggers(kind: "sqlite" | "postgres"): string[] {
  if (kind === "postgres") {
    const changed = replicaShownColumns.map((column) => `OLD.${column} IS DISTINCT FROM NEW.${column}`).join(" OR ");
    return [
      // Row-level: Postgres fires a statement-level INSERT trigger for an upsert that only updated,
      // so every beat's write of a fetch's progress, and every demand_at write, raised row 1 through it.
      ...fleetRevisionSources.flatMap(({ table }) => [
        `DROP TRIGGER ${table}_fleet_revision ON ${table}`,
        `CREATE TRIGGER ${table}_fleet_revision AFTER INSERT OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION bump_fleet_revision()`,
      ]),
      "DROP TRIGGER replicas_fleet_revision_update ON replicas",
      `CREATE TRIGGER replicas_fleet_revision_update AFTER UPDATE ON replicas FOR EACH ROW WHEN (${changed}) EXECUTE FUNCTION bump_fleet_revision()`,
      `CREATE FUNCTION bump_replica_progress_revision() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${bumpProgressRevision}; RETURN NULL; END $$`,
      "CREATE TRIGGER replicas_progress_revision AFTER UPDATE ON replicas FOR EACH ROW WHEN (OLD.progress IS DISTINCT FROM NEW.progress) EXECUTE FUNCTION bump_replica_progress_revision()",
    ];
  }
  const changed = replicaShownColumns.map((column) => `OLD.${column} IS NOT NEW.${column}`).join(" OR ");
  return [
    "DROP TRIGGER replicas_fleet_revision_update",
    `CREATE TRIGGER replicas_fleet_revision_update AFTER UPDATE ON replicas WHEN ${changed} BEGIN ${bumpFleetRevision}; END`,
    `CREATE TRIGGER replicas_progress_revision AFTER UPDATE ON replicas WHEN OLD.progress IS NOT NEW.progress BEGIN ${bumpProgressRevision}; END`,
  ];
}

/** Back to 0009's triggers: statement-level inserts and deletes, and every update of replicas raises row 1. */
export function dropReplicaProgressTriggers(kind: "sqlite" | "postgres"): string[] {
  if (kind === "postgres") {
    return [
      "DROP TRIGGER replicas_progress_revision ON replicas",
      "DROP FUNCTION bump_replica_progress_revision()",
      "DROP TRIGGER replicas_fleet_revision_update ON replicas",
      "CREATE TRIGGER replicas_fleet_revision_update AFTER UPDATE ON replicas FOR EACH STATEMENT EXECUTE FUNCTION bump_fleet_revision()",
      ...fleetRevisionSources.flatMap(({ table }) => [
        `DROP TRIGGER ${table}_fleet_revision ON ${table}`,
        `CREATE TRIGGER ${table}_fleet_revision AFTER INSERT OR DELETE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION bump_fleet_revision()`,
      ]),
    ];
  }
  return ["DROP TRIGGER replicas_progress_revision", "DROP TRIGGER replicas_fleet_revision_update", `CREATE TRIGGER replicas_fleet_revision_update AFTER UPDATE ON replicas BEGIN ${bumpFleetRevision}; END`];
}

/**
 * What the fleet's views are built from, and the columns of each that show in
 * them. A heartbeat that only says "still here" writes `last_seen_at` alone
 * (and a request on demand `demand_at` alone), so neither raises the
 * revision: the lists built once per revision stay valid while 500 nodes beat.
 * Triggers rather than a bump beside each write: servers sharing Postgres
 * each write, and no write path can forget it. (0011 replaces the update
 * trigger of replicas, so a fetch's progress raises a revision of its own.)
 */
const fleetRevisionSources: readonly { readonly table: string; readonly shown?: readonly string[] }[] = [
  { table: "nodes", shown: nodeShownColumns },
  { table: "replicas" },
  { table: "replica_intents" },
  { table: "node_controls" },
  { table: "model_status", shown: ["placement_state", "placement_reason", "last_failure", "last_failure_at", "failures", "backoff_until"] },
];

export function fleetRevisionTriggers(kind: "sqlite" | "postgres"): string[] {
  if (kind === "postgres") {
    const changed = (shown: readonly string[]) => shown.map((column) => `OLD.${column} IS DISTINCT FROM NEW.${column}`).join(" OR ");
    return [
      `CREATE FUNCTION bump_fleet_revision() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${bumpFleetRevision}; RETURN NULL; END $$`,
      ...fleetRevisionSources.flatMap(({ table, shown }) => [
        `CREATE TRIGGER ${table}_fleet_revision AFTER INSERT OR DELETE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION bump_fleet_revision()`,
        shown
          ? `CREATE TRIGGER ${table}_fleet_revision_update AFTER UPDATE ON ${table} FOR EACH ROW WHEN (${changed(shown)}) EXECUTE FUNCTION bump_fleet_revision()`
          : `CREATE TRIGGER ${table}_fleet_revision_update AFTER UPDATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION bump_fleet_revision()`,
      ]),
    ];
  }
  return fleetRevisionSources.flatMap(({ table, shown }) => [
    `CREATE TRIGGER ${table}_fleet_revision_insert AFTER INSERT ON ${table} BEGIN ${bumpFleetRevision}; END`,
    `CREATE TRIGGER ${table}_fleet_revision_delete AFTER DELETE ON ${table} BEGIN ${bumpFleetRevision}; END`,
    // SQLite's UPDATE OF fires for a column named in SET even when its value is the same: the WHEN clause compares.
    `CREATE TRIGGER ${table}_fleet_revision_update AFTER UPDATE ON ${table}${shown ? ` WHEN ${shown.map((column) => `OLD.${column} IS NOT NEW.${column}`).join(" OR ")}` : ""} BEGIN ${bumpFleetRevision}; END`,
  ]);
}

export function dropFleetRevisionTriggers(kind: "sqlite" | "postgres"): string[] {
  if (kind === "postgres") {
    return [...fleetRevisionSources.flatMap(({ table }) => [`DROP TRIGGER ${table}_fleet_revision ON ${table}`, `DROP TRIGGER ${table}_fleet_revision_update ON ${table}`]), "DROP FUNCTION bump_fleet_revision()"];
  }
  return fleetRevisionSources.flatMap(({ table }) => ["insert", "delete", "update"].map((operation) => `DROP TRIGGER ${table}_fleet_revision_${operation}`));
}


/** The nodes' update trigger over `shown`: 0013 makes a moved fabric address raise the revision like a moved control address. */
function nodeUpdateTrigger(kind: "sqlite" | "postgres", shown: readonly string[]): string[] {
  if (kind === "postgres") {
    const changed = shown.map((column) => `OLD.${column} IS DISTINCT FROM NEW.${column}`).join(" OR ");
    return ["DROP TRIGGER nodes_fleet_revision_update ON nodes", `CREATE TRIGGER nodes_fleet_revision_update AFTER UPDATE ON nodes FOR EACH ROW WHEN (${changed}) EXECUTE FUNCTION bump_fleet_revision()`];
  }
  const changed = shown.map((column) => `OLD.${column} IS NOT NEW.${column}`).join(" OR ");
  return ["DROP TRIGGER nodes_fleet_revision_update", `CREATE TRIGGER nodes_fleet_revision_update AFTER UPDATE ON nodes WHEN ${changed} BEGIN ${bumpFleetRevision}; END`];
}

export function nodeFabricNetworkTriggers(kind: "sqlite" | "postgres"): string[] {
  return nodeUpdateTrigger(kind, [...nodeShownColumns, "fabric_network"]);
}

export function dropNodeFabricNetworkTriggers(kind: "sqlite" | "postgres"): string[] {
  return nodeUpdateTrigger(kind, nodeShownColumns);
}
