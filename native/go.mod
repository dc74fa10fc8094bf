module ctk/native

go 1.22
