package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/pipeline"
)

func vetCommand(s *streams) *cli.Command {
	return renderCommand(s, "vet", "validate the source; silent when it is valid",
		"vet loads and validates the source and renders it in memory, writing nothing.", nil,
		func(*ioFlags, *pipeline.Result) error { return nil })
}
