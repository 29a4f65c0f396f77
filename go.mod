module edr-lite

go 1.26

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/yuin/gopher-lua v1.1.2 // indirect
)
