package faults_test

import (
	"context"

	"github.com/jackc/pgx/v5"
)

func pgxConnect(url string) (*pgx.Conn, error) { return pgx.Connect(context.Background(), url) }
