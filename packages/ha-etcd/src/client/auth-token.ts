/**
 * The auth token of one etcd user (etcd's `Authenticate`): fetched when first needed, shared by
 * every request meanwhile, and fetched again once etcd refused it. etcd forgets a simple token
 * after `--auth-token-ttl` (300 s) without use on the member asked, and when authentication is
 * turned off and on; a JWT token expires.
 */
export class AuthToken {
  private current: Promise<string> | undefined;
  private value: string | undefined;

  /**
   * @param authenticate - asks etcd for a new token within `timeoutMs` (`""` when etcd has no
   *   authentication enabled); `what` is the operation that needs it.
   */
  constructor(
    private readonly authenticate: (what: string, timeoutMs: number) => Promise<string>,
  ) {}

  /** The token to send; authenticates when there is none (a failure is not kept). */
  get(what: string, timeoutMs: number): Promise<string> {
    if (this.current === undefined) {
      const fetching = this.authenticate(what, timeoutMs).then(
        (token) => {
          if (this.current === fetching) this.value = token;
          return token;
        },
        (error: unknown) => {
          if (this.current === fetching) this.current = undefined;
          throw error;
        },
      );
      this.current = fetching;
    }
    return this.current;
  }

  /** etcd refused `token`: the next {@link AuthToken.get} authenticates again (unless it did). */
  refused(token: string): void {
    if (this.value === token) {
      this.current = undefined;
      this.value = undefined;
    }
  }
}
