// Package auth mints and verifies spine's bearer tokens.
//
// A token is a JSON Web Token signed with HMAC-SHA256 (HS256) under one
// server secret. It names who is calling — the organisation and the member —
// and which door it opens (the audience): member tokens carry audience
// [AudienceMember]; desktop runner tokens carry "spine-runner" (package
// desktop); an org's ingest token, which records the apps' telemetry as
// the members an admin mapped, carries [AudienceIngest]: none opens
// another's routes. A token may also claim how the apps behind it are
// billed (Claims.Billing), which the telemetry doors stamp on what they
// record. Every read and write
// in spine is scoped to the {org, member} a verified token names, so Verify
// is strict: exactly HS256 (never "none"), a constant-time signature check,
// the expected audience, an unexpired lifetime and both identities present.
//
// The package uses only the standard library. There is one algorithm and one
// key, so none of the header-driven key or algorithm selection that makes
// general JWT libraries easy to misuse exists here.
//
// Tokens are credentials: nothing in this package logs them or puts them in
// an error message, and callers must not either.
//
// A server loads (or, on first start, creates) its secret, mints a token for
// a member and checks the tokens that come back:
//
//	secret, err := auth.LoadOrCreateSecret(filepath.Join(dataDir, "token.secret"))
//	if err != nil {
//		return err
//	}
//	signer, err := auth.NewSigner(secret)
//	if err != nil {
//		return err
//	}
//	tok, err := signer.Mint(auth.Claims{Org: "acme", Member: "ada"}, 24*time.Hour)
//	...
//	raw, ok := auth.BearerToken(r)
//	if !ok {
//		// 401
//	}
//	claims, err := signer.Verify(raw, auth.AudienceMember, time.Now())
//	if err != nil {
//		// 401; every error wraps one of this package's sentinels
//	}
package auth
