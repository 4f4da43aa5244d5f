import * as http from 'node:http';
import { exportJWK, generateKeyPair, JWK, JWTPayload, SignJWT } from 'jose';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

/**
 * A stand-in authorization server for tests: real RSA key pairs, a JWKS served on loopback (the gateway fetches it
 * over HTTP as in production), and token minting. Keys can be added to the set to test rotation.
 */
export class TestIssuer {
  readonly issuer = 'https://auth.test.example';
  readonly audience = 'lance-gateway';
  private server?: http.Server;
  private readonly published: JWK[] = [];
  private readonly keys = new Map<string, PrivateKey>();
  fetches = 0;

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      this.fetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: this.published }));
    });
    // Logged, not left to become an uncaught exception of the test process.
    this.server.on('error', (err) => console.error(`jwks server: ${err.message}`));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    await this.addKey('k1');
  }

  get jwksUri(): string {
    return `http://127.0.0.1:${(this.server!.address() as { port: number }).port}/.well-known/jwks.json`;
  }

  /** Gateway environment for this issuer. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      OAUTH_JWKS_URI: this.jwksUri,
      OAUTH_ISSUER: this.issuer,
      OAUTH_AUDIENCE: this.audience,
      OAUTH_JWKS_COOLDOWN_MS: '0',
      ...extra,
    };
  }

  /** Generates a key pair; publishes its public half unless `publish` is false (a forger's key). */
  async addKey(kid: string, publish = true): Promise<void> {
    const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
    this.keys.set(kid, privateKey);
    if (publish) this.published.push({ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' });
  }

  /** A signed token: defaults are valid for 5 minutes, right issuer and audience. */
  async token(
    claims: JWTPayload & { scope?: string; databases?: unknown },
    opts: { kid?: string; signWith?: string; expiresIn?: string | number; issuer?: string; audience?: string; noExp?: boolean } = {},
  ): Promise<string> {
    const kid = opts.kid ?? 'k1';
    const key = this.keys.get(opts.signWith ?? kid);
    if (!key) throw new Error(`no key ${opts.signWith ?? kid}`);
    let jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuedAt()
      .setIssuer(opts.issuer ?? this.issuer)
      .setAudience(opts.audience ?? this.audience);
    if (!opts.noExp) jwt = jwt.setExpirationTime(opts.expiresIn ?? '5m');
    return jwt.sign(key);
  }

  async stop(): Promise<void> {
    await new Promise((r) => this.server?.close(r));
  }
}
