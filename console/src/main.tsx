import "@mantine/core/styles.css";
import { MantineProvider, NavLink, createTheme } from "@mantine/core";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode, lazy } from "react";
import { createRoot } from "react-dom/client";
import { RouterProvider, createBrowserRouter } from "react-router";
import { Layout } from "./Layout.tsx";
import { LoginPage } from "./pages/LoginPage.tsx";
import { currentToken, takeTokenFromFragment } from "./token.ts";
// In the first chunk already: the layout's session check is one of its queries.
import { prefetchModelsPage } from "./queries.ts";

// Before anything reads the address: the token leaves the fragment (and the history) at once.
takeTokenFromFragment();

// Shade 9 keeps white text on filled buttons and links on white above 4.5:1 contrast.
// The side navigation's active link keeps its resting background under the pointer: Mantine's
// hover shade (blue-2 in light) leaves its blue-9 label at 4.0:1, and the link just clicked is
// under the pointer with the focus. Its resting background (blue-1) gives 4.9:1; the console
// shows the light scheme only, but in the dark one the same rule gives 11.8:1.
const theme = createTheme({
  primaryColor: "blue",
  primaryShade: 9,
  components: {
    NavLink: NavLink.extend({ vars: () => ({ root: { "--nl-hover": "var(--mantine-primary-color-light)" }, children: {} }) }),
  },
});

const queryClient = new QueryClient({
  defaultOptions: { queries: { staleTime: 5_000, retry: 1, refetchOnWindowFocus: false } },
});

// Each page is its own chunk: the first page loads only what it shows.
const page = (load: () => Promise<{ default: React.ComponentType }>) => {
  const Page = lazy(load);
  return <Page />;
};

const loadModelsPage = () => import("./pages/ModelsPage.tsx");

const router = createBrowserRouter([
  { path: "/login", element: <LoginPage /> },
  {
    path: "/",
    element: <Layout />,
    children: [
      { index: true, element: page(() => import("./pages/OverviewPage.tsx")) },
      { path: "fleet", element: page(() => import("./pages/FleetPage.tsx")) },
      {
        path: "models",
        // Not awaited: the page's code and its lists load side by side with the session check, not after it.
        // Without a token there is nothing to ask for: the layout sends the visitor to the login page.
        loader: () => {
          void loadModelsPage();
          if (currentToken() !== null) prefetchModelsPage(queryClient);
          return null;
        },
        element: page(loadModelsPage),
      },
      { path: "models/:name", element: page(() => import("./pages/ModelPage.tsx")) },
      { path: "plan", element: page(() => import("./pages/PlanPage.tsx")) },
      { path: "playground", element: page(() => import("./pages/PlaygroundPage.tsx")) },
      { path: "keys", element: page(() => import("./pages/KeysPage.tsx")) },
      { path: "access", element: page(() => import("./pages/AccessPage.tsx")) },
      { path: "catalog", element: page(() => import("./pages/CatalogPage.tsx")) },
      { path: "events", element: page(() => import("./pages/EventsPage.tsx")) },
      { path: "audit", element: page(() => import("./pages/AuditPage.tsx")) },
      { path: "*", element: page(() => import("./pages/NotFoundPage.tsx")) },
    ],
  },
]);

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <MantineProvider theme={theme}>
        <QueryClientProvider client={queryClient}>
          <RouterProvider router={router} />
        </QueryClientProvider>
      </MantineProvider>
    </StrictMode>,
  );
}
