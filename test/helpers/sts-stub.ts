import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { freePort } from './redis';

/** One AssumeRole call as the stub received it. */
export interface StsRequest {
  /** The form parameters (Action, RoleArn, RoleSessionName, Policy, DurationSeconds, ExternalId, Version, …). */
  params: Record<string, string>;
  /** The access key id from the SigV4 Authorization header (`Credential=<id>/<date>/<region>/sts/aws4_request`). */
  accessKeyId?: string;
  /** The region from the same credential scope. */
  region?: string;
}

/** The temporary credentials the stub answered. */
export interface StsIssued {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiration: Date;
}

/**
 * A stand-in for the AWS Security Token Service (the real one cannot be reached here): a node:http server on a free
 * port answering AssumeRole form posts (the awsQuery protocol the SDK's STS client speaks) with fake credentials.
 * It records every request; `expiresInSeconds` sets the lifetime of what it answers next (default: the request's
 * DurationSeconds), `failWith` makes the next answers errors.
 */
export class StsStub {
  readonly requests: StsRequest[] = [];
  readonly issued: StsIssued[] = [];
  /** Lifetime of the next credentials answered; undefined: the request's DurationSeconds (default 3600). */
  expiresInSeconds?: number;
  /** When set, every AssumeRole is answered with this STS error. */
  failWith?: { status: number; code: string; message: string };

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
  ) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<StsStub> {
    const port = await freePort();
    let stub!: StsStub;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      // Its own failures (a request cut off, a mistake of the stub's) are logged and answered, never thrown out of
      // an event handler, where they would be an uncaught exception of the test process.
      req.on('error', (err) => console.error(`sts stub: request: ${err.message}`));
      res.on('error', (err) => console.error(`sts stub: response: ${err.message}`));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          stub.handle(req, Buffer.concat(chunks).toString('utf8'), res);
        } catch (err) {
          console.error(`sts stub: ${(err as Error).message}`);
          if (!res.headersSent) res.statusCode = 500;
          res.end();
        }
      });
    });
    server.on('error', (err) => console.error(`sts stub: ${err.message}`));
    stub = new StsStub(server, port);
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    return stub;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  /** The session policy of request `i`, parsed. */
  policy(i: number): { Version: string; Statement: Record<string, unknown>[] } {
    return JSON.parse(this.requests[i].params.Policy);
  }

  private handle(req: http.IncomingMessage, body: string, res: http.ServerResponse): void {
    const params = Object.fromEntries(new URLSearchParams(body));
    const scope = /Credential=([^/,\s]+)\/[^/]+\/([^/]+)\/sts\//.exec(String(req.headers.authorization ?? ''));
    this.requests.push({ params, accessKeyId: scope?.[1], region: scope?.[2] });
    const requestId = randomBytes(8).toString('hex');
    res.setHeader('content-type', 'text/xml');
    if (req.method !== 'POST' || params.Action !== 'AssumeRole') {
      return this.error(res, 400, 'InvalidAction', `the stub answers AssumeRole only, not ${params.Action}`, requestId);
    }
    if (this.failWith) return this.error(res, this.failWith.status, this.failWith.code, this.failWith.message, requestId);
    if (!params.RoleArn || !params.RoleSessionName)
      return this.error(res, 400, 'ValidationError', 'RoleArn and RoleSessionName are required', requestId);
    const lifetime = this.expiresInSeconds ?? Number(params.DurationSeconds ?? 3600);
    const issued: StsIssued = {
      accessKeyId: `ASIASTUB${randomBytes(6).toString('hex').toUpperCase()}`,
      secretAccessKey: `stub-secret-${randomBytes(12).toString('hex')}`,
      sessionToken: `stub-token-${randomBytes(24).toString('hex')}`,
      expiration: new Date(Math.floor((Date.now() + lifetime * 1000) / 1000) * 1000),
    };
    this.issued.push(issued);
    res.statusCode = 200;
    res.end(
      `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <SourceIdentity></SourceIdentity>
    <AssumedRoleUser>
      <Arn>${xml(params.RoleArn.replace(':iam::', ':sts::').replace(':role/', ':assumed-role/'))}/${xml(params.RoleSessionName)}</Arn>
      <AssumedRoleId>AROASTUB:${xml(params.RoleSessionName)}</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>${issued.accessKeyId}</AccessKeyId>
      <SecretAccessKey>${issued.secretAccessKey}</SecretAccessKey>
      <SessionToken>${issued.sessionToken}</SessionToken>
      <Expiration>${issued.expiration.toISOString()}</Expiration>
    </Credentials>
    <PackedPolicySize>10</PackedPolicySize>
  </AssumeRoleResult>
  <ResponseMetadata>
    <RequestId>${requestId}</RequestId>
  </ResponseMetadata>
</AssumeRoleResponse>`,
    );
  }

  private error(res: http.ServerResponse, status: number, code: string, message: string, requestId: string): void {
    res.statusCode = status;
    res.end(
      `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error>
    <Type>${status >= 500 ? 'Receiver' : 'Sender'}</Type>
    <Code>${xml(code)}</Code>
    <Message>${xml(message)}</Message>
  </Error>
  <RequestId>${requestId}</RequestId>
</ErrorResponse>`,
    );
  }
}

function xml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A storage profile that vends temporary credentials from `stub` for tables under `root` on the local S3 server. */
export function stsProfile(root: string, s3: { options: Record<string, string>; endpoint: string }, stub: { endpoint: string }) {
  return {
    root,
    options: s3.options,
    client_options: { aws_endpoint: s3.endpoint, allow_http: 'true', aws_region: 'us-east-1' },
    role_arn: 'arn:aws:iam::123456789012:role/lance-tables',
    sts_endpoint: stub.endpoint,
  };
}
