package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/nodegen/nodegen/internal/build"
)

func vetCommand(s *streams) *cli.Command {
	return renderCommand(s, "vet", "validate the source; silent when it is valid",
		"vet loads and validates the source and renders it in memory, writing nothing.", nil,
		func(*ioFlags, *build.Result) error { return nil })
}
