// Package library is spine's content-addressed file store.
//
// A file is named by the BLAKE3-256 digest of its bytes, written in one
// textual form everywhere: "blake3:" and 64 lowercase hex digits. Identical
// content is stored once, however often it is written; bytes are kept
// zstd-compressed when that is smaller, and every read re-hashes them so a
// corrupted blob is an error, never served.
//
//	store := library.NewPGStore(nil) // or with library.NewMetrics(registry)
//	b := library.NewBlob(content)
//	err := store.PutMany(ctx, tx, []library.Blob{b})
//	data, err := store.Get(ctx, pool, b.Digest)
//
// BlobStore is the interface a second store (filesystem, object store)
// would implement; PGStore keeps bytes in PostgreSQL (library_files and
// library_pieces: 1 MiB pieces, each zstd-compressed when smaller and hashed).
//
// An upload stores its bytes first and then records them on the log
// (PublishUpload on SPINE_LIBRARY); Projector turns each upload event into
// an artifact, a named reference to the file owned by the member who
// uploaded it.
package library
