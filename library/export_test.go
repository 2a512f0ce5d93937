package library

// MaxStatementBytes lets tests split PutMany's statements.
var MaxStatementBytes = &maxStatementBytes
