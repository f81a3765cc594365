/**
 * SHA-256 of the prebuilt `pty.node` of `@lydell/node-pty-<platform>` per node-pty version: the
 * binary hosts load into the daemon is fetched by name at build time, so it is pinned here.
 * `scripts/fetch-pty-prebuilds.mjs` refuses a download that differs, and the relay refuses to ship
 * a vendored or installed prebuilt that differs (an unpinned version included). Updating node-pty
 * means adding its hashes here after checking them (the fetch script prints what it got).
 */
export const PTY_PREBUILD_SHA256: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  '1.1.0': {
    'linux-x64': 'ff8c140f142c13030d84193e5ba2ac556d320cf29d8efecc391174bfb8861cb0',
    'linux-arm64': 'c192e560428e778842fdbbe72f14032824b03373ed49ad3efcdbcf9eb249b75b',
  },
};

/** Why a prebuilt with this sha256 may not be shipped, or undefined when it is the pinned one. */
export function prebuiltPinProblem(platform: string, ptyVersion: string, sha256: string): string | undefined {
  const pinned = PTY_PREBUILD_SHA256[ptyVersion]?.[platform];
  if (pinned === undefined) return `no sha256 is pinned for node-pty ${ptyVersion} on ${platform}`;
  if (pinned !== sha256) return `its sha256 ${sha256} is not the pinned ${pinned}`;
  return undefined;
}
