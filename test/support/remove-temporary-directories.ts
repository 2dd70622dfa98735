import { afterAll } from "vitest";
import { removeTemporaryDirectories } from "./temporary-directory.js";

// A setup file: registered first, so it runs after each test file's own
// afterAll hooks have stopped the servers that were writing into these folders.
afterAll(() => {
  removeTemporaryDirectories();
});
