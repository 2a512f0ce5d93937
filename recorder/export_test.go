package recorder

// MaxLoadedChunks lets tests bound loadTranscripts.
var MaxLoadedChunks = &maxLoadedChunks
