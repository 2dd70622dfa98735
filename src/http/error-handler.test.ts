import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { DomainError } from "../errors/domain-error.js";
import { installErrorHandling } from "./error-handler.js";

describe("error answers", () => {
  it("mask a URL password quoted anywhere in an error's message, hint or details", async () => {
    const app = Fastify();
    installErrorHandling(app);
    app.get("/fails", async () => {
      throw new DomainError(
        "source_unavailable",
        "could not fetch https://robot:msgpass@mirror.example/m/ on node gpu-1",
        "Check DATABASE_URL=postgres://app:hint@pass@db/app",
        [{ where: "profiles[0].source", message: "https://robot:detailpass@mirror.example/m/ answered 401" }],
      );
    });
    const response = await app.inject({ method: "GET", url: "/fails" });
    await app.close();
    expect(response.statusCode).toBe(502);
    for (const secret of ["msgpass", "hint@pass", "pass@db", "detailpass"]) expect(response.body).not.toContain(secret);
    expect(response.json().error).toMatchObject({
      code: "source_unavailable",
      message: "could not fetch https://robot:***@mirror.example/m/ on node gpu-1",
      hint: "Check DATABASE_URL=postgres://app:***@db/app",
    });
  });
});

describe("a body over the app's limit", () => {
  it("is refused 413 stating the limit in force, and where the admin API's is set", async () => {
    const app = Fastify({ bodyLimit: 2048 });
    installErrorHandling(app);
    app.post("/echo", async (request) => ({ got: request.body }));
    const response = await app.inject({ method: "POST", url: "/echo", headers: { "content-type": "application/json" }, payload: JSON.stringify({ text: "x".repeat(3000) }) });
    await app.close();
    expect(response.statusCode).toBe(413);
    expect(response.json().error).toMatchObject({ code: "body_too_large", message: "request: the body is larger than the server accepts (2 KiB)", hint: expect.stringContaining("limits.body_bytes in server.yaml") });
  });
});
