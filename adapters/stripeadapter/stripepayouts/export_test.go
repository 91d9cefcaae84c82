package stripepayouts

// For the external tests: the key's forms and the check of what is shown of them.
var (
	KeyForms   = keyForms
	CheckShown = checkShown
)
