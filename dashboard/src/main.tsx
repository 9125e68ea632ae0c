import './styles.css';

import { QueryClient, QueryClientProvider, useQueryClient } from '@tanstack/react-query';
import { createRootRoute, createRoute, createRouter, Link, Outlet, RouterProvider } from '@tanstack/react-router';
import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';

import { api, currentMode, type Mode, setMode } from './api.ts';
import { ApiKeys } from './pages/api-keys.tsx';
import { ForgotPassword, ResetPassword, SignUp } from './pages/auth-pages.tsx';
import { Coupons } from './pages/coupons.tsx';
import { CustomerDetail } from './pages/customer-detail.tsx';
import { Customers } from './pages/customers.tsx';
import { Exports } from './pages/exports.tsx';
import { Home } from './pages/home.tsx';
import { InvoiceDetail, Invoices } from './pages/invoices.tsx';
import { Meters } from './pages/meters.tsx';
import { PaymentRequests } from './pages/payment-requests.tsx';
import { Payouts } from './pages/payouts.tsx';
import { Plans } from './pages/plans.tsx';
import { Settings } from './pages/settings.tsx';
import { SubscriptionDetail, Subscriptions } from './pages/subscriptions.tsx';
import { TaxRates } from './pages/tax-rates.tsx';
import { Team } from './pages/team.tsx';
import { TestClockDetail, TestClocks } from './pages/test-clocks.tsx';
import { Transactions } from './pages/transactions.tsx';
import { WebhookDetail, Webhooks } from './pages/webhooks.tsx';
import { Portal } from './portal.tsx';
import { canManage, SessionContext, SignIn, useBrowserSession, useSession } from './session.tsx';
import { ErrorNote } from './ui.tsx';

const nav: { to: string; label: string; manage?: boolean }[] = [
  { to: '/', label: 'Home' },
  { to: '/customers', label: 'Customers' },
  { to: '/plans', label: 'Plans' },
  { to: '/coupons', label: 'Coupons' },
  { to: '/meters', label: 'Meters' },
  { to: '/tax-rates', label: 'Tax rates' },
  { to: '/subscriptions', label: 'Subscriptions' },
  { to: '/invoices', label: 'Invoices' },
  { to: '/transactions', label: 'Transactions' },
  { to: '/payment-requests', label: 'Payment requests' },
  { to: '/payouts', label: 'Payouts' },
  { to: '/exports', label: 'Exports' },
  { to: '/test-clocks', label: 'Test clocks' },
  { to: '/webhooks', label: 'Webhooks', manage: true },
  { to: '/api-keys', label: 'API keys', manage: true },
  { to: '/settings', label: 'Settings' },
  { to: '/team', label: 'Team', manage: true },
];

function ModeSwitch({ mode, onChange }: { mode: Mode; onChange: (mode: Mode) => void }) {
  const client = useQueryClient();
  return (
    <fieldset className="mode-switch">
      <legend className="visually-hidden">Mode</legend>
      {(['test', 'live'] as const).map((value) => (
        <label key={value} className={mode === value ? 'checked' : ''}>
          <input
            type="radio"
            name="mode"
            value={value}
            checked={mode === value}
            onChange={() => {
              setMode(value);
              onChange(value);
              client.removeQueries({ predicate: (query) => query.queryKey[0] !== 'session' });
            }}
          />
          {value === 'test' ? 'Sandbox' : 'Live'}
        </label>
      ))}
    </fieldset>
  );
}

function Shell() {
  const session = useSession();
  const client = useQueryClient();
  const [menuOpen, setMenuOpen] = useState(false);
  const [mode, setLocalMode] = useState<Mode>(currentMode());
  const sandbox = mode === 'test';
  return (
    <div className={`shell ${sandbox ? 'is-sandbox' : 'is-live'}`}>
      {sandbox ? (
        <div className="sandbox-banner" role="status">
          Sandbox: test data, no real money moves.
        </div>
      ) : null}
      <header className="topbar">
        <button
          type="button"
          className="menu-toggle"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <span className="brand">{session.account?.name ?? 'Billing'}</span>
        <ModeSwitch mode={mode} onChange={setLocalMode} />
        <span className="who">
          {session.user.email} <span className="role">({session.user.role})</span>
        </span>
        <button
          type="button"
          onClick={async () => {
            await api.DELETE('/v1/auth/browser_session');
            client.setQueryData(['session'], null);
          }}
        >
          Sign out
        </button>
      </header>
      <div className="layout">
        <nav id="main-nav" aria-label="Main" className={menuOpen ? 'open' : ''}>
          <ul>
            {nav
              .filter((item) => !item.manage || canManage(session))
              .map((item) => (
                <li key={item.to}>
                  <Link
                    to={item.to}
                    activeOptions={{ exact: item.to === '/' }}
                    activeProps={{ 'aria-current': 'page', className: 'active' }}
                    onClick={() => setMenuOpen(false)}
                  >
                    {item.label}
                  </Link>
                </li>
              ))}
          </ul>
        </nav>
        <main id="content">
          <Outlet key={mode} />
        </main>
      </div>
    </div>
  );
}

function Root() {
  const session = useBrowserSession();
  if (session.isLoading) return <p className="loading">Loading…</p>;
  if (session.error) return <ErrorNote error={session.error} />;
  if (!session.data) return <SignIn />;
  return (
    <SessionContext.Provider value={session.data}>
      <Shell />
    </SessionContext.Provider>
  );
}

const rootRoute = createRootRoute({ component: Outlet });
// The owners' pages need a signed-in session; the customer portal has its own credential (the link's token).
const appRoute = createRoute({ getParentRoute: () => rootRoute, id: 'app', component: Root });
const portalRoute = createRoute({ getParentRoute: () => rootRoute, path: '/portal', component: Portal });
// Signed out: sign-up, and the password reset the emailed link opens (/dashboard/reset-password#token=…).
const signedOut = (path: '/sign-up' | '/forgot-password' | '/reset-password', component: () => React.ReactNode) =>
  createRoute({ getParentRoute: () => rootRoute, path, component });
const page = <P extends string>(path: P, component: () => React.ReactNode) =>
  createRoute({ getParentRoute: () => appRoute, path, component });
const routeTree = rootRoute.addChildren([
  portalRoute,
  signedOut('/sign-up', SignUp),
  signedOut('/forgot-password', ForgotPassword),
  signedOut('/reset-password', ResetPassword),
  appRoute.addChildren([
    page('/', Home),
    page('/customers', Customers),
    page('/customers/$id', CustomerDetail),
    page('/plans', Plans),
    page('/coupons', Coupons),
    page('/meters', Meters),
    page('/tax-rates', TaxRates),
    page('/subscriptions', Subscriptions),
    page('/subscriptions/$id', SubscriptionDetail),
    page('/invoices', Invoices),
    page('/invoices/$id', InvoiceDetail),
    page('/transactions', Transactions),
    page('/payment-requests', PaymentRequests),
    page('/payouts', Payouts),
    page('/exports', Exports),
    page('/test-clocks', TestClocks),
    page('/test-clocks/$id', TestClockDetail),
    page('/webhooks', Webhooks),
    page('/webhooks/$id', WebhookDetail),
    page('/api-keys', ApiKeys),
    page('/settings', Settings),
    page('/team', Team),
  ]),
]);
const router = createRouter({ routeTree, basepath: '/dashboard' });
declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}

const queryClient = new QueryClient({ defaultOptions: { queries: { staleTime: 5_000, refetchOnWindowFocus: false } } });
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
