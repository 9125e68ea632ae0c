import { api, date, unwrap } from '../api.ts';
import { useSession } from '../session.tsx';
import { ActionButton, ActionForm, Field, PagedTable, PageTitle, Status } from '../ui.tsx';

export function Team() {
  const session = useSession();
  return (
    <>
      <PageTitle>Team</PageTitle>
      <ActionForm
        title="Add a user"
        submit="Add user"
        action={(v) =>
          unwrap(
            api.POST('/v1/users', {
              body: {
                email: v.email!,
                password: v.password!,
                name: v.name || undefined,
                role: v.role as 'member' | 'owner',
              },
            }),
          )
        }
      >
        <Field label="Email" name="email" type="email" required />
        <Field label="Name" name="name" />
        <Field label="Initial password" name="password" type="password" required />
        <Field label="Role" name="role" options={['member', 'owner']} />
      </ActionForm>
      <PagedTable
        label="Users"
        queryKey={['users']}
        fetchPage={async () => {
          // Users page by number (GET /v1/users answers `pagination`); a team fits in the first 100.
          const users = await unwrap(api.GET('/v1/users', { params: { query: { limit: 100 } } }));
          return { data: users.data, has_more: false };
        }}
        columns={[
          { header: 'Email', cell: (u) => u.email },
          { header: 'Name', cell: (u) => u.name ?? '—' },
          { header: 'Role', cell: (u) => u.role },
          { header: 'Status', cell: (u) => <Status value={u.status} /> },
          { header: 'Added', cell: (u) => date(u.created_at) },
          {
            header: 'Actions',
            cell: (u) =>
              u.id === session.user.id || u.role !== 'member' ? null : (
                <ActionButton
                  label="Remove"
                  className="danger"
                  confirm={`Remove ${u.email}?`}
                  action={() => unwrap(api.DELETE('/v1/users/{id}', { params: { path: { id: u.id } } }))}
                />
              ),
          },
        ]}
      />
    </>
  );
}
