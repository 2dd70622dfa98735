import SqliteDatabase from "better-sqlite3";
import { Kysely, SqliteDialect, sql, type Generated } from "kysely";
import { describe, expect, it } from "vitest";
import { cachingStatements } from "./statement-cache.js";

describe("cachingStatements", () => {
  it("prepares a text once and hands the same statement back, the least used going first past the capacity", () => {
    const database = new SqliteDatabase(":memory:");
    const cached = cachingStatements(database, 2);
    const first = cached.prepare("SELECT 1");
    expect(cached.prepare("SELECT 1")).toBe(first);
    const second = cached.prepare("SELECT 2");
    cached.prepare("SELECT 1"); // now SELECT 2 is the least used
    cached.prepare("SELECT 3");
    expect(cached.prepare("SELECT 1")).toBe(first);
    expect(cached.prepare("SELECT 2")).not.toBe(second);
    cached.close();
  });

  it("gives a statement of its own to a call made while the cached one is still iterating", () => {
    const database = new SqliteDatabase(":memory:");
    const cached = cachingStatements(database);
    const streaming = cached.prepare("SELECT value FROM json_each('[1,2,3]')");
    const rows = streaming.iterate([]);
    rows.next();
    const meanwhile = cached.prepare("SELECT value FROM json_each('[1,2,3]')");
    expect(meanwhile).not.toBe(streaming);
    expect(meanwhile.all([])).toHaveLength(3);
    rows.return?.();
    cached.close();
  });

  it("serves Kysely's reads, writes and transactions as the plain handle does", async () => {
    const db = new Kysely<{ items: { id: Generated<number>; name: string } }>({ dialect: new SqliteDialect({ database: cachingStatements(new SqliteDatabase(":memory:")) }) });
    await sql`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`.execute(db);
    for (const name of ["a", "b", "c"]) await db.insertInto("items").values({ name }).execute();
    await expect(
      db.transaction().execute(async (transaction) => {
        await transaction.insertInto("items").values({ name: "d" }).execute();
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect((await db.selectFrom("items").select("name").orderBy("id").execute()).map((row) => row.name)).toEqual(["a", "b", "c"]);
    expect(await db.selectFrom("items").select("name").where("name", "=", "b").executeTakeFirst()).toEqual({ name: "b" });
    await db.destroy();
  });
});
