// The linter catches what type-checking and review miss: a promise nobody
// awaits (its rejection crashes the process or vanishes), a promise passed
// where a plain callback is expected (an event handler that rejects is never
// seen), and, in the product's code, a condition the types say is always true
// or always false (a dead branch that hides the real case, or a check that
// belongs at the edge where outside input is parsed). Type-aware rules read the
// same tsconfig files as `npm run typecheck`.
import tseslint from "typescript-eslint";

const productCode = ["src/**/*.ts", "console/src/**/*.ts", "console/src/**/*.tsx"];

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "console/dist/**", "**/*.js", "**/*.mjs", "**/*.cjs"] },
  {
    files: ["**/*.ts", "**/*.tsx"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@typescript-eslint": tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-explicit-any": "error",
      "no-control-regex": "error",
    },
  },
  {
    // Tests keep their guards: a `?.` in an afterAll protects the cleanup of a
    // beforeAll that failed half-way, which the types cannot know.
    files: productCode,
    ignores: ["**/*.test.ts", "**/testing/**"],
    rules: { "@typescript-eslint/no-unnecessary-condition": "error" },
  },
);
