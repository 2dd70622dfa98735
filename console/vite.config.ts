import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/**
 * The console as static files under dist/console, served by `llmgw server`
 * at `/`: hashed assets (cached for good), one index.html (never cached), no
 * inline script so the server's Content-Security-Policy can forbid it.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  plugins: [react()],
  build: {
    outDir: "../dist/console",
    emptyOutDir: true,
    assetsDir: "assets",
    // Vite's module preload polyfill is an inline-free file already; keep the CSP-safe default.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 800,
  },
  server: {
    // `LLMGW_SERVER=http://127.0.0.1:PORT npx vite console` develops against a running server.
    proxy: process.env.LLMGW_SERVER ? { "/api": process.env.LLMGW_SERVER, "/v1": process.env.LLMGW_SERVER } : {},
  },
});
