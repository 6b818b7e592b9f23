// The OpenID Connect provider that tests/test_oidc_sign_in.py signs staff in at: node's
// oidc-provider on a free loopback port, with its development sign-in pages (any password).
// Given in the environment: OIDC_TEST_REDIRECT_URI (memoryadmin's callback),
// OIDC_TEST_CLIENT_SECRET and OIDC_TEST_SIGNING_KEY (a private RSA JWK, so the tests can sign
// tokens the provider's published key vouches for). Prints {"issuer": ...} once it listens.
import http from 'node:http';

import Provider from 'oidc-provider';

// The company's staff as the provider knows them (their login is their sub): one in each
// memoryadmin group, one in none.
const ACCOUNTS = {
  'ann-admin': { groups: ['memoryadmin-admin', 'everyone'], given_name: 'Ann', family_name: 'Admin' },
  'sam-support': { groups: ['memoryadmin-support', 'everyone'], given_name: 'Sam', family_name: 'Support' },
  'olga-outsider': { groups: ['sales', 'everyone'], given_name: 'Olga', family_name: 'Outsider' },
};

let handle = (req, res) => { res.statusCode = 503; res.end(); };
const server = http.createServer((req, res) => handle(req, res));

server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'memoryadmin',
      client_secret: process.env.OIDC_TEST_CLIENT_SECRET,
      redirect_uris: [process.env.OIDC_TEST_REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    }],
    jwks: { keys: [JSON.parse(process.env.OIDC_TEST_SIGNING_KEY)] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'given_name', 'family_name'],
      groups: ['groups'],
    },
    cookies: { keys: ['test-only-cookie-key'] },
    async findAccount(ctx, id) {
      const account = ACCOUNTS[id];
      if (!account) return undefined;
      return {
        accountId: id,
        async claims() {
          return {
            preferred_username: id,
            email: `${id}@example.com`,
            email_verified: true,
            ...account,
          };
        },
      };
    },
  });
  handle = provider.callback();
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
