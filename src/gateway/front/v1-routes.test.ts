import { describe, expect, it } from "vitest";
import { readFrontRequest } from "./front-request-head.js";
import { v1PostRoutes } from "./v1-routes.js";

const limits = { maxHeadBytes: 16 * 1024, maxBodyBytes: 1024 };
const postTo = (path: string) => readFrontRequest(Buffer.from(`POST ${path} HTTP/1.1\r\nhost: gw\r\ncontent-length: 2\r\n\r\n{}`, "latin1"), 0, limits);

describe("the /v1 route table", () => {
  it("gives the socket-level front exactly its proxied routes marked for it, and leaves the rest to node's server", () => {
    const front = [...v1PostRoutes].filter(([path]) => postTo(path) !== "other").map(([path]) => path);
    expect(front).toEqual(["/v1/chat/completions", "/v1/completions", "/v1/embeddings"]);
    for (const [path, route] of v1PostRoutes) {
      const read = postTo(path);
      if (route.kind === "proxied" && route.front) expect(read, path).toMatchObject({ endpoint: route.endpoint });
      else expect(read, path).toBe("other");
    }
  });
});
