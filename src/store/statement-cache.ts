import type SqliteDatabase from "better-sqlite3";
import type { SqliteDatabase as KyselySqliteDatabase, SqliteStatement } from "kysely";

/**
 * A better-sqlite3 handle for Kysely that prepares each distinct SQL text once.
 * Kysely's SQLite driver calls `prepare` for every query it runs, and SQLite
 * parses and plans the text anew each time: in a profile of 500 nodes
 * beating and the admin lists being read, `prepare` was a third of all the
 * time spent in SQLite. The server runs a few hundred distinct statements
 * (the same queries with other parameters), so nearly every call is a hit.
 *
 * Bounded, oldest-used first out: a query with a variable-length IN list is
 * a new text per length, and must not grow the cache without end. A cached
 * statement still iterating (a streamed select) is busy and cannot run
 * again; such a call gets a statement of its own, prepared as before.
 * SQLite re-plans a prepared statement by itself after a schema change, so
 * migrations do not make a cached one stale.
 */
export function cachingStatements(database: SqliteDatabase.Database, capacity = 512): KyselySqliteDatabase {
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached !== undefined && !cached.busy) {
        // Moved to the newest end, so the least used is the first key.
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = database.prepare(sql);
      if (cached === undefined) {
        statements.set(sql, statement);
        if (statements.size > capacity) statements.delete(statements.keys().next().value as string);
      }
      return statement;
    },
    close(): void {
      statements.clear();
      database.close();
    },
  };
}
