"""In-cluster enforcement: the rules' ADMISSION declarations as ValidatingAdmissionPolicies
(`policy`), an emulation of how the API server evaluates them (`emulate`, for the parity
test and `dra-guard admission-policy --test`), and a validating webhook for what CEL cannot
do (`webhook`)."""
