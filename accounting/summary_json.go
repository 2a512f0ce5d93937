package accounting

import (
	"encoding/json"
	"strconv"
)

// AppendJSON appends the summary as a json.Encoder writes it, byte for
// byte, newline included. A session listing is a row per session (17,101
// rows, 9.3 MB); written field by field it takes a fraction of
// encoding/json's reflection.
func (s *Summary) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"org":`...)
	b = appendString(b, s.Org)
	if s.Member != "" {
		b = appendString(append(b, `,"member":`...), s.Member)
	}
	for _, f := range []struct {
		name string
		t    interface{ MarshalJSON() ([]byte, error) }
	}{{`,"from":`, s.From}, {`,"to":`, s.To}} {
		t, err := f.t.MarshalJSON()
		if err != nil {
			return b, err
		}
		b = append(append(b, f.name...), t...)
	}
	b = appendString(append(b, `,"groupBy":`...), s.GroupBy)
	b = append(b, `,"rows":[`...)
	for i := range s.Rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.Rows[i].appendJSON(b)
	}
	b = s.Total.appendJSON(append(b, `],"total":`...))
	if s.Next != nil {
		b = appendString(append(b, `,"next":`...), *s.Next)
	}
	return append(b, "}\n"...), nil
}

func (r *Row) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"key":`...), r.Key)
	b = r.Metered.appendJSON(append(b, `,"metered":`...))
	b = r.Subscription.appendJSON(append(b, `,"subscription":`...))
	b = r.Unknown.appendJSON(append(b, `,"unknown":`...))
	return append(b, '}')
}

// zeroCell is an empty cell's JSON: two of a session row's three.
const zeroCell = `{"calls":0,"callsWithUsage":0,"callsWithCost":0,"tokens":{"input":0,"output":0,"cacheRead":0,` +
	`"cacheWrite":0,"reasoning":0,"total":0},"dollars":null}`

func (c *Cell) appendJSON(b []byte) []byte {
	if *c == (Cell{}) {
		return append(b, zeroCell...)
	}
	t := &c.Tokens
	for _, f := range []struct {
		name string
		n    int64
	}{{`{"calls":`, c.Calls}, {`,"callsWithUsage":`, c.CallsWithUsage}, {`,"callsWithCost":`, c.CallsWithCost},
		{`,"tokens":{"input":`, t.Input}, {`,"output":`, t.Output}, {`,"cacheRead":`, t.CacheRead},
		{`,"cacheWrite":`, t.CacheWrite}, {`,"reasoning":`, t.Reasoning}, {`,"total":`, t.Total}} {
		b = strconv.AppendInt(append(b, f.name...), f.n, 10)
	}
	b = append(b, `},"dollars":`...)
	switch {
	case c.Dollars == nil:
		b = append(b, "null"...)
	case *c.Dollars == "":
		b = append(b, '0') // as encoding/json writes an empty Number
	default:
		b = append(b, *c.Dollars...) // numeric's text: a plain decimal
	}
	return append(b, '}')
}

// appendString quotes s as encoding/json does: text that needs no escape
// (printable ASCII but for ", \, <, > and &) as it is, anything else
// through json.Marshal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
