package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/pipeline"
)

func vetCommand(s *streams) *cli.Command {
	return renderCommand(s, "vet", "validate the source; exit 0 when it is valid, printing only its warnings",
		"vet loads and validates the source and renders it in memory, writing nothing.", nil,
		func(*ioFlags, *pipeline.Result) error { return nil })
}
